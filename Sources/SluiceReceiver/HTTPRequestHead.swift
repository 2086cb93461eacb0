import Sluice
import Foundation
/// A parsed HTTP/1.x request line and header section, as the loopback receiver reads it.
struct HTTPRequestHead: Equatable {
    /// How the request's body is delimited (RFC 9112 §6.3).
    enum Framing: Equatable {
        case none
        case length(Int64)
        case chunked
    }

    /// A request the receiver answers with an error status instead of reading it.
    struct Rejection: Error, Equatable {
        var status: Int
        var reason: String

        static func badRequest(_ reason: String) -> Rejection { Rejection(status: 400, reason: reason) }
    }

    var method: String
    var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    var minorVersion: Int
    var headers: [HTTPHeader]

    /// The values of every field named `name` (case-insensitive), in order.
    func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name }.map(\.value)
    }

    /// The target's path, without query; the path of an absolute-form target.
    var path: String {
        var text = Substring(target)
        if let scheme = text.range(of: "://"), !text.hasPrefix("/") {
            text = text[scheme.upperBound...]
            text = text.firstIndex(of: "/").map { text[$0...] } ?? "/"
        }
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<query] }
        return String(text)
    }

    /// Whether the connection stays open after this request's response.
    var keepAlive: Bool {
        let tokens = values("connection").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingBlanks.lowercased() }
        if tokens.contains("close") { return false }
        return minorVersion >= 1 || tokens.contains("keep-alive")
    }

    /// Whether the client waits for `100 Continue` before sending the body.
    ///
    /// - Throws: `Rejection` 417 for any expectation other than `100-continue`.
    func expectsContinue() throws(Rejection) -> Bool {
        let expectations = values("expect")
        guard !expectations.isEmpty else { return false }
        guard expectations.allSatisfy({ $0.lowercased() == "100-continue" }) else {
            throw Rejection(status: 417, reason: "unsupported expectation")
        }
        return minorVersion >= 1
    }

    /// The body's framing, checked the way nginx checks it.
    ///
    /// - Throws: `Rejection` 400 for both `Content-Length` and `Transfer-Encoding`, a
    ///   malformed or repeated `Content-Length`, or `Transfer-Encoding` on HTTP/1.0; 501 for a
    ///   transfer coding other than `chunked`.
    func framing() throws(Rejection) -> Framing {
        let lengths = values("content-length")
        let encodings = values("transfer-encoding")
        if !lengths.isEmpty && !encodings.isEmpty {
            throw .badRequest("both Content-Length and Transfer-Encoding")
        }
        if !encodings.isEmpty {
            guard minorVersion >= 1 else { throw .badRequest("Transfer-Encoding in an HTTP/1.0 request") }
            let codings = encodings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingBlanks.lowercased() }
            guard codings == ["chunked"] else {
                throw Rejection(status: 501, reason: "unsupported Transfer-Encoding \(encodings.joined(separator: ", "))")
            }
            return .chunked
        }
        guard let text = lengths.first else { return .none }
        guard lengths.count == 1 else { throw .badRequest("repeated Content-Length") }
        guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let length = Int64(text)
        else {
            throw .badRequest("malformed Content-Length \(text)")
        }
        return .length(length)
    }

    /// Parses a request head: the bytes up to and including the blank line that ends it.
    ///
    /// - Throws: `Rejection` 400 for a malformed request line or field (bare LF, blanks before a
    ///   colon, folded lines, bytes outside the grammar, HTTP/1.1 without `Host`); 505 for a
    ///   version other than 1.0 or 1.1.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Rejection) -> HTTPRequestHead {
        var lines: [ArraySlice<UInt8>] = []
        let all = Array(bytes)
        var start = 0
        for index in all.indices where all[index] == UInt8(ascii: "\n") {
            guard index > 0, all[index - 1] == UInt8(ascii: "\r") else {
                throw .badRequest("bare LF in the request head")
            }
            lines.append(all[start..<index - 1])
            start = index + 1
        }
        guard start == all.count else { throw .badRequest("request head does not end in CRLF") }
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard lines.count >= 2, lines.last?.isEmpty == true else { throw .badRequest("incomplete request head") }
        lines.removeLast()

        let requestLine = lines.removeFirst()
        if requestLine.contains(UInt8(ascii: "\r")) { throw .badRequest("bare CR in the request line") }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .badRequest("malformed request line") }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.allSatisfy(HTTPSyntax.isTokenCharacter) else {
            throw .badRequest("malformed method")
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badRequest("malformed request target")
        }
        let versionText = String(decoding: version, as: UTF8.self)
        let minorVersion: Int
        switch versionText {
        case "HTTP/1.1": minorVersion = 1
        case "HTTP/1.0": minorVersion = 0
        default:
            guard versionText.hasPrefix("HTTP/"), versionText.count == 8 else {
                throw .badRequest("malformed HTTP version")
            }
            throw Rejection(status: 505, reason: "HTTP version \(versionText) not supported")
        }

        var headers: [HTTPHeader] = []
        for line in lines {
            if let first = line.first, HTTPSyntax.isBlank(first) { throw .badRequest("folded header line") }
            guard let field = HTTPSyntax.parseFieldLine(line) else {
                throw .badRequest("malformed header line")
            }
            headers.append(field)
        }
        let head = HTTPRequestHead(
            method: String(decoding: method, as: UTF8.self),
            target: String(decoding: target, as: UTF8.self),
            minorVersion: minorVersion,
            headers: headers
        )
        if minorVersion >= 1 {
            let hosts = head.values("host")
            guard hosts.count == 1 else { throw .badRequest(hosts.isEmpty ? "missing Host" : "repeated Host") }
        }
        return head
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate var trimmingBlanks: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
