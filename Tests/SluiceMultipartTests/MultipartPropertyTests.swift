import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Random body shapes: the announced length is the number of bytes produced, and
/// reads at any offset match a front-to-back read.
@Suite struct MultipartPropertyTests {
    typealias Support = MultipartTestSupport

    static func randomString(_ generator: inout SeededGenerator) -> String {
        let pieces = ["a", "Z", "0", " ", "\"", "\r", "\n", ";", "=", "\\", "é", "名", "🙂", "%", "\t", "--"]
        return (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    /// A random body and its expected bytes, built independently of the encoder's layout code.
    static func randomBody(seed: UInt64) throws -> (MultipartBody, [UInt8]) {
        var generator = SeededGenerator(seed: seed)
        var parts: [MultipartPart] = []
        var contents: [[UInt8]] = []
        for _ in 0..<Int.random(in: 0...9, using: &generator) {
            let name = randomString(&generator)
            let filename: String? = Bool.random(using: &generator) ? randomString(&generator) : nil
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:
                let value = randomString(&generator)
                parts.append(try .field(name, value))
                contents.append(Array(value.utf8))
            case 1:
                let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                parts.append(try .bytes(name, bytes, filename: filename))
                contents.append(bytes)
            default:
                let source = SyntheticByteSource(length: Int64.random(in: 0...5000, using: &generator), seed: generator.next())
                parts.append(try .source(name, source, filename: filename, contentType: "application/x-test; seed=\(source.seed)"))
                contents.append(try source.bytes(in: 0..<source.length))
            }
        }
        let body = try MultipartBody(parts: parts, boundary: Support.boundary)
        var expected: [UInt8] = []
        for (part, content) in zip(parts, contents) {
            expected += Array("--\(Support.boundary)\r\n".utf8)
            var disposition = "Content-Disposition: form-data; name=\"\(escape(part.name))\""
            if let filename = part.filename { disposition += "; filename=\"\(escape(filename))\"" }
            expected += Array("\(disposition)\r\n".utf8)
            if let type = part.contentType { expected += Array("Content-Type: \(type)\r\n".utf8) }
            expected += Array("\r\n".utf8) + content + Array("\r\n".utf8)
        }
        expected += Array("--\(Support.boundary)--\r\n".utf8)
        if parts.isEmpty { expected = Array("--\(Support.boundary)--\r\n".utf8) }
        return (body, expected)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22")
            .replacingOccurrences(of: "\r\n", with: "%0D%0A")  // "\r\n" is one Character in Swift
            .replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    @Test(arguments: 0..<200)
    func lengthEqualsBytesProduced(seed: UInt64) throws {
        let (body, expected) = try Self.randomBody(seed: seed &* 7919 &+ 1)
        let chunk = [1, 7, 71, 4096][Int(seed % 4)]
        let produced = try Support.readAll(body, chunk: chunk)
        if produced != expected || body.length != Int64(produced.count) {
            print("MultipartPropertyTests seed \(seed &* 7919 &+ 1) failed")
        }
        #expect(body.length == Int64(produced.count))
        #expect(produced == expected)
    }

    /// One more shape per run from a fresh seed (printed; `SLUICE_TEST_SEED` replays it).
    @Test func freshSeedShapeReadsBackExactly() throws {
        let seed = testSeed("MultipartPropertyTests.freshSeedShapeReadsBackExactly")
        let (body, expected) = try Self.randomBody(seed: seed)
        #expect(try Support.readAll(body, chunk: 13) == expected)
        #expect(body.length == Int64(expected.count))
    }

    @Test(arguments: 0..<50)
    func randomAccessMatchesSequentialRead(seed: UInt64) throws {
        let bodySeed = seed &* 104_729 &+ 3
        let (body, _) = try Self.randomBody(seed: bodySeed)
        let whole = try Support.readAll(body, chunk: 4096)
        var generator = SeededGenerator(seed: bodySeed ^ 0xA5A5)
        for _ in 0..<40 {
            let start = Int64.random(in: 0...body.length, using: &generator)
            let end = Int64.random(in: start...body.length, using: &generator)
            let slice = try body.bytes(in: start..<end)
            if slice != Array(whole[Int(start)..<Int(end)]) {
                print("MultipartPropertyTests random access seed \(bodySeed) range \(start)..<\(end) failed")
            }
            #expect(slice == Array(whole[Int(start)..<Int(end)]))
        }
        #expect(throws: ByteSourceError.offsetOutOfRange(offset: body.length + 1, length: body.length)) {
            _ = try body.bytes(in: (body.length + 1)..<(body.length + 2))
        }
    }
}
