import Testing
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver
import SluiceTestSupport

/// curl `-F` syntax, checked against what curl 7.88 sends for the same arguments
/// (see MultipartEndToEndTests.sameArgumentsParseTheSameWithCurl for the live comparison).
@Suite struct FormArgumentTests {
    enum Value: Equatable {
        case text(String)
        case file(String)
    }

    struct Expected {
        var name: String
        var value: Value
        var filename: String? = nil
        var type: String? = nil
        var headers: [String] = []
    }

    static func check(_ argument: String, _ expected: Expected) throws {
        let part = try FormArgument.parse(argument)
        #expect(part.name == expected.name, "\(argument)")
        switch part.content {
        case .bytes(let bytes): #expect(Value.text(String(decoding: bytes, as: UTF8.self)) == expected.value, "\(argument)")
        case .file(let path): #expect(Value.file(path) == expected.value, "\(argument)")
        case .source: Issue.record("unexpected source part for \(argument)")
        }
        #expect(part.filename == expected.filename, "\(argument)")
        #expect(part.contentType == expected.type, "\(argument)")
        #expect(part.headers.map(\.description) == expected.headers, "\(argument)")
    }

    @Test func textFields() throws {
        try Self.check("name=value", Expected(name: "name", value: .text("value")))
        try Self.check("name=", Expected(name: "name", value: .text("")))
        try Self.check("=v", Expected(name: "", value: .text("v")))
        try Self.check("a=b=c", Expected(name: "a", value: .text("b=c")))
        try Self.check("a= spaced out  ", Expected(name: "a", value: .text("spaced out")))
        try Self.check("q=\"a;b\"", Expected(name: "q", value: .text("a;b")))
        try Self.check("q=\"a\\\"b\\\\c\\d\"", Expected(name: "q", value: .text("a\"b\\c\\d")))
        try Self.check("q=\"unterminated", Expected(name: "q", value: .text("\"unterminated")))
        try Self.check("q=\"quoted\"  ;type=a/b", Expected(name: "q", value: .text("quoted"), type: "a/b"))
        try Self.check("n\"a\r\nme=v", Expected(name: "n\"a\r\nme", value: .text("v")))
        try Self.check("é=ü", Expected(name: "é", value: .text("ü")))
    }

    @Test func textFieldParameters() throws {
        try Self.check("z=abc  ;  filename=  x y  ", Expected(name: "z", value: .text("abc"), filename: "x y"))
        try Self.check(
            "n=v;type=text/plain; charset=utf-8",
            Expected(name: "n", value: .text("v"), type: "text/plain; charset=utf-8"))
        try Self.check("n=v;filename=x.pdf", Expected(name: "n", value: .text("v"), filename: "x.pdf", type: "application/pdf"))
        try Self.check("l=v;type=a/b ; q=1 ;filename=y", Expected(name: "l", value: .text("v"), filename: "y", type: "a/b ; q=1"))
        try Self.check("k=v;filename=x.pdf;type=a/b", Expected(name: "k", value: .text("v"), filename: "x.pdf", type: "a/b"))
        try Self.check("t=v;TYPE=a/b;Filename=F", Expected(name: "t", value: .text("v"), filename: "F", type: "a/b"))
        // As in curl, a second type= is a parameter of the first; its value is not a token.
        #expect(throws: MultipartError.invalidContentType("a/b;type=c/d", reason: "unexpected character at offset 10; parameters follow ';'")) {
            try FormArgument.parse("t=v;type=a/b;type=c/d")
        }
    }

    @Test func fileParts() throws {
        try Self.check("f=@/data/a.txt", Expected(name: "f", value: .file("/data/a.txt"), filename: "a.txt", type: "text/plain"))
        try Self.check("f=@blob.bin", Expected(name: "f", value: .file("blob.bin"), filename: "blob.bin", type: "application/octet-stream"))
        try Self.check(
            "f=@p.bin;type=image/png;filename=NAME",
            Expected(name: "f", value: .file("p.bin"), filename: "NAME", type: "image/png"))
        try Self.check("f=@\"a;b,c.txt\"", Expected(name: "f", value: .file("a;b,c.txt"), filename: "a;b,c.txt", type: "text/plain"))
        try Self.check(
            "f=@blob.bin;filename=\"a;b\\\"c\"",
            Expected(name: "f", value: .file("blob.bin"), filename: "a;b\"c", type: "application/octet-stream"))
        try Self.check("f=@a.txt;filename=x.png", Expected(name: "f", value: .file("a.txt"), filename: "x.png", type: "image/png"))
        try Self.check("f=@a.txt;filename=", Expected(name: "f", value: .file("a.txt"), filename: "", type: "text/plain"))
        try Self.check(
            "f=@a.txt;headers=\"X-A: b\";headers=X-C: d",
            Expected(name: "f", value: .file("a.txt"), filename: "a.txt", type: "text/plain", headers: ["X-A: b", "X-C: d"]))
    }

    @Test func valueFromFile() throws {
        try Self.check("v=<a.txt", Expected(name: "v", value: .file("a.txt")))
        try Self.check("v=<a.txt;type=text/x", Expected(name: "v", value: .file("a.txt"), type: "text/x"))
    }

    @Test func literalValues() throws {
        #expect(try FormArgument.parseLiteral("a=@not;a=file").content.bytesForTest == Array("@not;a=file".utf8))
        #expect(try FormArgument.parseLiteral("a=<x").content.bytesForTest == Array("<x".utf8))
        #expect(try FormArgument.parseLiteral("a=\"q\"").content.bytesForTest == Array("\"q\"".utf8))
        #expect(try FormArgument.parseLiteral("a=b").filename == nil)
        #expect(throws: MultipartError.invalidFormArgument("nothing", reason: "no '=' (expected NAME=VALUE, NAME=@FILE or NAME=<FILE)")) {
            try FormArgument.parseLiteral("nothing")
        }
    }

    @Test(arguments: [
        ("novalue", "no '=' (expected NAME=VALUE, NAME=@FILE or NAME=<FILE)"),
        ("a=@a,b", "several files in one part ('@a,b') are not supported; use one --form per file, or quote a path holding ','"),
        ("a=@-", "reading a part from stdin is not supported: a multipart body needs every part's length before it starts"),
        ("a=<-", "reading a part from stdin is not supported: a multipart body needs every part's length before it starts"),
        ("a=@", "no file name after '@' or '<'"),
        ("a=<p;filename=x", "filename= does not apply to a value read with '<'"),
        ("a=b;c", "unknown parameter \"c\" (known: type=, filename=, headers=); quote a value holding ';', or use --form-string"),
        ("a=\"b\"c", "text after a closing quote; put ';' between parameters"),
        ("a=b;type=text", "type= needs TYPE/SUBTYPE, such as text/plain"),
        ("a=b;type=", "type= needs TYPE/SUBTYPE, such as text/plain"),
        ("a=(", "multipart/mixed subparts ('=(' ... '=)') are not supported"),
        ("a=@p;encoder=base64", "encoder= is not supported"),
        ("a=@p;headers=@file", "headers= from a file is not supported; give each header inline"),
        ("a=@p;headers=nocolon", "headers=\"nocolon\" is not a 'Name: value' header"),
        ("a=b;filename=x;filename=y", "filename= given twice"),
    ])
    func refusedArguments(argument: String, reason: String) {
        #expect(throws: MultipartError.invalidFormArgument(argument, reason: reason)) { try FormArgument.parse(argument) }
    }

    @Test func partValidationErrorsPassThrough() {
        #expect(throws: MultipartError.nulInName("a\0")) { try FormArgument.parse("a\0=b") }
        #expect(throws: MultipartError.self) { try FormArgument.parse("a=@p;headers=\"Content-Type: x/y\"") }
        #expect(throws: MultipartError.invalidContentType("text/plain\"x", reason: "unexpected character at offset 10; parameters follow ';'")) {
            try FormArgument.parse("a=b;type=text/plain\"x")
        }
    }

    @Test func errorIsOneLine() {
        let error = MultipartError.invalidFormArgument("a\r\nb", reason: "no '='")
        #expect(error.description == "invalid form argument \"a\\r\\nb\": no '='")
    }
}

extension MultipartPart.Content {
    var bytesForTest: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }
}
