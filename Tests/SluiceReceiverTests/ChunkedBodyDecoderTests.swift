import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The receiver's chunked decoder and request-head parser, fed in every possible split.
@Suite struct ChunkedBodyDecoderTests {
    /// Decodes `wire` fed in pieces of `piece` bytes; returns the data, the bytes consumed, and
    /// the trailers.
    private static func decode(_ wire: [UInt8], piece: Int) throws -> (data: [UInt8], consumed: Int, trailers: [HTTPHeader]) {
        var decoder = ChunkedBodyDecoder()
        var data: [UInt8] = []
        var offset = 0
        while offset < wire.count && !decoder.isFinished {
            let end = min(wire.count, offset + piece)
            let consumed = try wire[offset..<end].withUnsafeBytes { raw in
                try decoder.consume(raw) { data += $0 }
            }
            offset += consumed
            if consumed < end - offset + consumed { break }
        }
        #expect(decoder.decodedBytes == Int64(data.count))
        return (data, offset, decoder.trailers)
    }

    private static let valid = Array(
        ("5\r\nhello\r\n"
            + "00009 ; ext ; name=value;q=\"a \\\" b\" \r\n world, 1\r\n"
            + "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n"
            + "0;last\r\nX-Trailer: one\r\nOther:two  \r\n\r\n"
            + "NEXT REQUEST").utf8)

    @Test func decodesAtEverySplitSize() throws {
        let bodyEnd = Self.valid.count - "NEXT REQUEST".utf8.count
        for piece in 1...Self.valid.count {
            let (data, consumed, trailers) = try Self.decode(Self.valid, piece: piece)
            #expect(String(decoding: data, as: UTF8.self) == "hello world, 1abcdefghijklmnopqrstuvwxyz", "piece \(piece)")
            #expect(consumed == bodyEnd, "piece \(piece)")
            #expect(trailers == [HTTPHeader(name: "X-Trailer", value: "one"), HTTPHeader(name: "Other", value: "two")])
        }
    }

    @Test(arguments: [
        ("x\r\n", ChunkedBodyDecoder.Failure.malformedChunkSize),
        ("\r\n", .malformedChunkSize),
        ("5 x\r\n", .malformedChunkSize),
        ("5\n", .missingCRLF),
        ("5\rX", .missingCRLF),
        ("1\r\naX", .missingCRLF),
        ("1\r\na\rX", .missingCRLF),
        ("11111111111111111\r\n", .chunkSizeTooLarge),
        ("8000000000000000\r\n", .chunkSizeTooLarge),
        ("5;\r\n", .malformedExtension),
        ("5;a=\r\n", .malformedExtension),
        ("5;a=\"open\r\n", .malformedExtension),
        ("5;a=b c\r\n", .malformedChunkSize),
        ("0\r\nBad Name: x\r\n", .malformedTrailer),
        ("0\r\n folded\r\n", .malformedTrailer),
        ("0\r\nX: a\u{7F}\r\n", .malformedTrailer),
    ])
    func rejectsMalformedFraming(wire: String, failure: ChunkedBodyDecoder.Failure) {
        #expect(throws: failure) { _ = try Self.decode(Array(wire.utf8), piece: 1) }
        #expect(throws: failure) { _ = try Self.decode(Array(wire.utf8), piece: 4096) }
    }

    @Test func boundsLinesAndTrailers() {
        let longLine = "5;" + String(repeating: "a", count: ChunkedBodyDecoder.maxLineLength) + "\r\n"
        #expect(throws: ChunkedBodyDecoder.Failure.lineTooLong) { _ = try Self.decode(Array(longLine.utf8), piece: 333) }
        let manyTrailers = "0\r\n" + String(repeating: "X-Field: " + String(repeating: "v", count: 1000) + "\r\n", count: 17)
        #expect(throws: ChunkedBodyDecoder.Failure.trailersTooLarge) { _ = try Self.decode(Array(manyTrailers.utf8), piece: 777) }
    }

    @Test func requestHeadFraming() throws {
        func head(_ text: String) throws -> HTTPRequestHead {
            try Array(text.utf8).withUnsafeBytes { raw throws(HTTPRequestHead.Rejection) in try HTTPRequestHead.parse(raw) }
        }
        let chunked = try head("\r\nPUT http://h:1/a/b?q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:  Chunked \r\nConnection: close\r\n\r\n")
        #expect(try chunked.framing() == .chunked)
        #expect(chunked.path == "/a/b")
        #expect(!chunked.keepAlive)
        let old = try head("POST /x HTTP/1.0\r\nContent-Length: 42\r\nConnection: Keep-Alive\r\n\r\n")
        #expect(try old.framing() == .length(42))
        #expect(old.keepAlive)
        #expect(try !old.expectsContinue())
        #expect(try head("GET / HTTP/1.0\r\n\r\n").framing() == .none)
        #expect(try !head("GET / HTTP/1.0\r\n\r\n").keepAlive)
        #expect(throws: HTTPRequestHead.Rejection.self) { _ = try head("GET / HTTP/1.1\r\nHost: a\r\nX\r\n\r\n") }
        #expect(throws: HTTPRequestHead.Rejection.self) { _ = try head("GET / HTTP/1.1\r\nHost: a\r\n cont\r\n\r\n") }
        #expect(throws: HTTPRequestHead.Rejection.self) { _ = try head("GET  / HTTP/1.1\r\nHost: a\r\n\r\n") }
        #expect(throws: HTTPRequestHead.Rejection.self) { _ = try head("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") }
        #expect(throws: HTTPRequestHead.Rejection.self) { _ = try head("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").framing() }
    }
}
