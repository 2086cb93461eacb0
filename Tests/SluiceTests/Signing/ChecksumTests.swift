import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver

@Suite struct ChecksumTests {
    /// RFC 3720 (iSCSI) appendix B.4 CRC32C vectors.
    @Test func crc32cRFC3720Vectors() {
        let zeros = [UInt8](repeating: 0, count: 32)
        let ones = [UInt8](repeating: 0xFF, count: 32)
        let ascending = (0..<32).map { UInt8($0) }
        let descending = (0..<32).map { UInt8(31 - $0) }
        #expect(ChecksumHasher.checksum(.crc32c, of: zeros).hex == "8a9136aa")
        #expect(ChecksumHasher.checksum(.crc32c, of: ones).hex == "62a8ab43")
        #expect(ChecksumHasher.checksum(.crc32c, of: ascending).hex == "46dd794e")
        #expect(ChecksumHasher.checksum(.crc32c, of: descending).hex == "113fdb5c")
        #expect(ChecksumHasher.checksum(.crc32c, of: Array("123456789".utf8)).hex == "e3069283")
        #expect(ChecksumHasher.checksum(.crc32, of: Array("123456789".utf8)).hex == "cbf43926")
        #expect(ChecksumHasher.checksum(.crc32c, of: []).hex == "00000000")
    }

    /// The hardware path (three interleaved streams) against the tables, every length to 3
    /// long blocks plus odd offsets, fed whole and in random pieces.
    @Test func hardwareAndTablesAgree() {
        let seed = testSeed("crc32c hardware vs tables")
        var generator = SeededGenerator(seed: seed)
        let data = (0..<(3 * 8192 * 2 + 777)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        data.withUnsafeBytes { all in
            for length in [0, 1, 7, 8, 9, 767, 768, 769, 3 * 256, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, all.count - 3] {
                for start in [0, 1, 3] where start + length <= all.count {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    #expect(CRC.crc32c(0, slice) == CRC.crc32cSoftware(0, slice), "length \(length) start \(start)")
                }
            }
            var crc: UInt32 = 0
            var offset = 0
            while offset < all.count {
                let count = min(Int.random(in: 1...30_000, using: &generator), all.count - offset)
                crc = CRC.crc32c(crc, UnsafeRawBufferPointer(rebasing: all[offset..<offset + count]))
                offset += count
            }
            #expect(crc == CRC.crc32cSoftware(0, all))
        }
        print("crc32c uses the CPU instruction: \(CRC.crc32cUsesHardware)")
    }

    /// Random blobs against Python's `crc32c` package, `zlib.crc32` and `hashlib.sha256`.
    @Test(.timeLimit(.minutes(1))) func againstPython() async throws {
        let seed = testSeed("checksums vs python")
        var generator = SeededGenerator(seed: seed)
        var blobs: [[UInt8]] = [[], [0], [UInt8](repeating: 0xFF, count: 32)]
        for _ in 0..<40 {
            let length = [Int.random(in: 0...64, using: &generator), Int.random(in: 0...70_000, using: &generator), Int.random(in: 0...300_000, using: &generator)].randomElement(using: &generator)!
            blobs.append((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let answers = try #require(try await runPythonPeer("checksum_peer.py", input: blobs.map { Data($0).base64EncodedString() }) as? [[String: Any]])
        #expect(answers.count == blobs.count)
        for (blob, answer) in zip(blobs, answers) {
            #expect(ChecksumHasher.checksum(.crc32c, of: blob).crcValue == (answer["crc32c"] as? NSNumber)?.uint32Value, "\(blob.count) bytes")
            #expect(ChecksumHasher.checksum(.crc32, of: blob).crcValue == (answer["crc32"] as? NSNumber)?.uint32Value, "\(blob.count) bytes")
            #expect(ChecksumHasher.checksum(.sha256, of: blob).hex == answer["sha256"] as? String, "\(blob.count) bytes")
        }
    }

    /// S3's composite multipart checksum: the checksum of the concatenated raw part checksums,
    /// base64, `-N`. Values computed independently (Python: `base64.b64encode(crc32c(b"".join(parts)))`).
    @Test func compositeOfParts() throws {
        let parts = [Array("hello ".utf8), Array("multipart ".utf8), Array("world".utf8)]
        for algorithm in ChecksumAlgorithm.allCases {
            let checksums = parts.map { ChecksumHasher.checksum(algorithm, of: $0) }
            let composite = try #require(Checksum.composite(of: checksums))
            let concatenated = checksums.flatMap(\.bytes)
            #expect(composite.checksum == ChecksumHasher.checksum(algorithm, of: concatenated))
            #expect(composite.s3Value == ChecksumHasher.checksum(algorithm, of: concatenated).base64 + "-3")
            #expect(CompositeChecksum(algorithm: algorithm, s3Value: composite.s3Value) == composite)
        }
        // Fixed values (crc32c of the part CRCs' big-endian bytes).
        let crcs = parts.map { ChecksumHasher.checksum(.crc32c, of: $0) }
        #expect(crcs.map(\.base64) == ["fmJ+WA==", "zrN+dg==", "MaqBTg=="])
        #expect(Checksum.composite(of: crcs)?.s3Value == "UzstHA==-3")
        #expect(Checksum.composite(of: []) == nil)
        #expect(Checksum.composite(of: [crcs[0], ChecksumHasher.checksum(.crc32, of: [])]) == nil)
        #expect(CompositeChecksum(algorithm: .crc32c, s3Value: "UzstHA==") == nil)
    }

    /// Full-object CRCs of multipart objects: combining the parts' CRCs gives the CRC of the whole.
    @Test func fullObjectCombination() throws {
        let seed = testSeed("crc combine")
        var generator = SeededGenerator(seed: seed)
        for algorithm in [ChecksumAlgorithm.crc32c, .crc32] {
            let sizes = [0, 1, 5000, 65536, 3, 100_001].shuffled(using: &generator)
            let parts = sizes.map { size in (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            let combined = try #require(Checksum.fullObject(of: parts.map { (ChecksumHasher.checksum(algorithm, of: $0), Int64($0.count)) }))
            #expect(combined == ChecksumHasher.checksum(algorithm, of: parts.flatMap { $0 }))
        }
        #expect(Checksum.fullObject(of: [(ChecksumHasher.checksum(.sha256, of: []), 0)]) == nil)
    }

    @Test func base64Forms() {
        let crc = ChecksumHasher.checksum(.crc32c, of: [UInt8](repeating: 0, count: 32))
        #expect(crc.base64 == "ipE2qg==")
        #expect(Checksum(algorithm: .crc32c, base64: "ipE2qg==") == crc)
        #expect(Checksum(algorithm: .crc32c, base64: "ipE2") == nil)
        #expect(ChecksumAlgorithm.sha256.base64Count == ChecksumHasher.checksum(.sha256, of: []).base64.count)
        #expect(ChecksumAlgorithm.crc32.base64Count == 8)
    }
}
