import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

@Suite struct MultipartBodyTests {
    typealias Support = MultipartTestSupport

    @Test func exactBytesForFieldsAndFiles() throws {
        let body = try MultipartBody(
            parts: [
                .field("title", "Holiday\r\nphotos"),
                .bytes("photo", Array("PNGDATA".utf8), filename: "a.png", contentType: "image/png"),
                .source("blob", SyntheticByteSource(length: 4), filename: "blob.bin"),
                MultipartPart(
                    name: "note", content: .bytes([]), contentType: "text/plain; charset=utf-8",
                    headers: [HTTPHeader(name: "X-Extra", value: "1")]),
            ], boundary: Support.boundary)
        let b = Support.boundary
        let expected =
            Array(
                ("--\(b)\r\n"
                    + "Content-Disposition: form-data; name=\"title\"\r\n"
                    + "\r\n"
                    + "Holiday\r\nphotos\r\n"
                    + "--\(b)\r\n"
                    + "Content-Disposition: form-data; name=\"photo\"; filename=\"a.png\"\r\n"
                    + "Content-Type: image/png\r\n"
                    + "\r\n"
                    + "PNGDATA\r\n"
                    + "--\(b)\r\n"
                    + "Content-Disposition: form-data; name=\"blob\"; filename=\"blob.bin\"\r\n"
                    + "Content-Type: application/octet-stream\r\n"
                    + "\r\n").utf8)
            + [0xAF, 0xCD, 0x1D, 0x7B]
            + Array(
                ("\r\n--\(b)\r\n"
                    + "Content-Disposition: form-data; name=\"note\"\r\n"
                    + "Content-Type: text/plain; charset=utf-8\r\n"
                    + "X-Extra: 1\r\n"
                    + "\r\n"
                    + "\r\n--\(b)--\r\n").utf8)
        let produced = try Support.readAll(body)
        #expect(produced == expected)
        #expect(body.length == Int64(expected.count))
        #expect(body.contentType == "multipart/form-data; boundary=\(b)")
    }

    @Test func emptyBodyIsOnlyTheClosingDelimiter() throws {
        let body = try MultipartBody(parts: [], boundary: Support.boundary)
        #expect(try Support.readAll(body) == Array("--\(Support.boundary)--\r\n".utf8))
    }

    @Test func emptyNameIsSentAsEmptyQuotedString() throws {
        let body = try MultipartBody(parts: [.field("", "v")], boundary: Support.boundary)
        let lines = Support.headerLines(of: try Support.readAll(body), boundary: Support.boundary)
        #expect(lines == [["Content-Disposition: form-data; name=\"\""]])
    }

    @Test func boundaryIsRandomPerBodyAndStableAcrossReads() throws {
        let parts = [try MultipartPart.field("a", "b")]
        let first = try MultipartBody(parts: parts)
        let second = try MultipartBody(parts: parts)
        #expect(first.boundary != second.boundary)
        for body in [first, second] {
            #expect(body.boundary.hasPrefix("----SluiceBoundary"))
            #expect(body.boundary.utf8.count == 50)
            #expect(body.boundary.dropFirst(18).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            #expect(MultipartBody.isValidBoundary(body.boundary))
        }
        #expect(try Support.readAll(first, chunk: 7) == Support.readAll(first, chunk: 4096))
    }

    @Test func filePartStreamsTheFileWithGuessedTypeAndBasename() throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notes.TXT").path
        try Data("file contents".utf8).write(to: URL(fileURLWithPath: path))
        let part = try MultipartPart.file("doc", path: path)
        #expect(part.filename == "notes.TXT")
        #expect(part.contentType == "text/plain")
        let body = try MultipartBody(parts: [part], boundary: Support.boundary)
        defer { body.close() }
        let expected =
            "--\(Support.boundary)\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"notes.TXT\"\r\n"
            + "Content-Type: text/plain\r\n\r\nfile contents\r\n--\(Support.boundary)--\r\n"
        #expect(Support.text(try Support.readAll(body)) == expected)
    }

    @Test(arguments: [
        ("a.bin", nil as String?, "application/octet-stream"),
        ("a.png", nil, "image/png"),
        ("a.JPeG", nil, "image/jpeg"),
        ("a.txt", "renamed.svg", "image/svg+xml"),
        ("a.txt", "noext", "text/plain"),
        ("a.bin", "", "application/octet-stream"),
    ])
    func fileContentTypeIsGuessedAsCurlDoes(path: String, filename: String?, expected: String) throws {
        let part = try MultipartPart.file("f", path: "/nowhere/\(path)", filename: filename)
        #expect(part.contentType == expected)
        #expect(part.filename == (filename ?? path))
    }

    @Test func missingFileAndDirectoryAreClearErrors() throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("missing.bin").path
        #expect(throws: MultipartError.cannotOpen(path: missing, cause: .notFound(path: missing))) {
            try MultipartBody(parts: [.field("a", "b"), .file("f", path: missing)])
        }
        #expect(throws: MultipartError.cannotOpen(path: directory.path, cause: .isDirectory(path: directory.path))) {
            try MultipartBody(parts: [.file("f", path: directory.path)])
        }
        let error = MultipartError.cannotOpen(path: missing, cause: .notFound(path: missing))
        #expect(error.description == "cannot read form file \"\(missing)\": \(missing): no such file")
    }

    @Test func nulIsRefusedInNamesAndFilenames() throws {
        #expect(throws: MultipartError.nulInName("a\0b")) { try MultipartPart.field("a\0b", "v") }
        #expect(throws: MultipartError.nulInFilename("x\0.txt")) {
            try MultipartPart.bytes("a", [], filename: "x\0.txt")
        }
        #expect(MultipartError.nulInName("a\0b").description == "form part name \"a\\0b\" contains a NUL byte")
    }

    @Test(arguments: [
        "text/plain", "application/octet-stream", "text/plain; charset=utf-8", "text/plain;charset=utf-8",
        "a/b ; q=1", "a/b;", "application/vnd.api+json", "text/plain; name=\"quoted; \\\"value\\\"\"",
        "  image/png  ",
    ])
    func validContentTypes(type: String) throws {
        let part = try MultipartPart.field("a", "b", contentType: type)
        #expect(part.contentType == type.trimmingCharacters(in: .whitespaces))
    }

    @Test(arguments: [
        ("text", "expected '/' after the type, as in text/plain"),
        ("", "expected type/subtype, such as text/plain"),
        ("/plain", "expected type/subtype, such as text/plain"),
        ("text/", "expected a subtype after '/'"),
        ("text/plain\r\nX-Injected: 1", "it contains a CR, LF or NUL"),
        ("text/plain\nX: 1", "it contains a CR, LF or NUL"),
        ("text/pl ain", "unexpected character at offset 8; parameters follow ';'"),
        ("text/plain; charset", "expected '=' after a parameter name"),
        ("text/plain; charset=\"utf-8", "unterminated quoted parameter value"),
        ("text/plain; =x", "expected a parameter name at offset 12"),
        ("text/plain; a=b c", "unexpected character at offset 16; parameters follow ';'"),
        ("tëxt/plain", "expected '/' after the type, as in text/plain"),
    ])
    func invalidContentTypes(type: String, reason: String) {
        #expect(throws: MultipartError.invalidContentType(type, reason: reason)) {
            try MultipartPart.field("a", "b", contentType: type)
        }
    }

    @Test func partHeadersSluiceWritesAreRefused() throws {
        #expect(throws: MultipartError.self) {
            try MultipartPart(name: "a", content: .bytes([]), headers: [HTTPHeader(name: "content-type", value: "a/b")])
        }
        #expect(throws: MultipartError.self) {
            try MultipartPart(name: "a", content: .bytes([]), headers: [HTTPHeader(name: "Content-Disposition", value: "x")])
        }
    }
}
