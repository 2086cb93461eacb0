import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

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
        var generator = SeededGenerator(seed: testSeed("crc32c hardware vs tables"))
        let data = (0..<(3 * 8192 * 2 + 777)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let lengths = [0, 1, 7, 8, 9, 767, 768, 769, 3 * 256, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, data.count - 3]
        expectSameCRC(
            data, lengths: lengths, starts: [0, 1, 3], pieces: 30_000, using: &generator,
            fast: { UInt64(CRC.crc32c(UInt32($0), $1)) }, tables: { UInt64(CRC.crc32cSoftware(UInt32($0), $1)) })
        print("crc32c uses the CPU instruction: \(CRC.crc32cUsesHardware)")
    }

    /// `fast` and `tables` agree on `data` at every length and start given, and when `fast` is
    /// fed the whole in random pieces of up to `pieces` bytes.
    private func expectSameCRC(
        _ data: [UInt8], lengths: [Int], starts: [Int], pieces: Int, using generator: inout SeededGenerator,
        fast: (UInt64, UnsafeRawBufferPointer) -> UInt64, tables: (UInt64, UnsafeRawBufferPointer) -> UInt64
    ) {
        data.withUnsafeBytes { all in
            for length in lengths {
                for start in starts where start + length <= all.count {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    #expect(fast(0, slice) == tables(0, slice), "length \(length) start \(start)")
                }
            }
            var crc: UInt64 = 0
            var offset = 0
            while offset < all.count {
                let count = min(Int.random(in: 1...pieces, using: &generator), all.count - offset)
                crc = fast(crc, UnsafeRawBufferPointer(rebasing: all[offset..<offset + count]))
                offset += count
            }
            #expect(crc == tables(0, all))
        }
    }

    /// Random blobs against Python's `crc32c` package, `zlib.crc32` and `hashlib.sha256`.
    @Test(.hangGuard) func againstPython() async throws {
        let seed = testSeed("checksums vs python")
        var generator = SeededGenerator(seed: seed)
        var blobs: [[UInt8]] = [[], [0], [UInt8](repeating: 0xFF, count: 32)]
        for _ in 0..<40 {
            let length = [Int.random(in: 0...64, using: &generator), Int.random(in: 0...70_000, using: &generator), Int.random(in: 0...300_000, using: &generator)].randomElement(
                using: &generator)!
            blobs.append((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let answers = try #require(try await runPythonPeer("checksum_peer.py", input: blobs.map { Data($0).base64EncodedString() }) as? [[String: Any]])
        #expect(answers.count == blobs.count)
        for (blob, answer) in zip(blobs, answers) {
            for algorithm in [ChecksumAlgorithm.crc64nvme, .crc32c, .crc32] {
                #expect(
                    ChecksumHasher.checksum(algorithm, of: blob).crcValue == (answer[algorithm.rawValue] as? NSNumber)?.uint64Value,
                    "\(algorithm) of \(blob.count) bytes")
            }
            for algorithm in [ChecksumAlgorithm.sha1, .sha256] {
                #expect(ChecksumHasher.checksum(algorithm, of: blob).hex == answer[algorithm.rawValue] as? String, "\(algorithm) of \(blob.count) bytes")
            }
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
        for algorithm in [ChecksumAlgorithm.crc64nvme, .crc32c, .crc32] {
            let sizes = [0, 1, 5000, 65536, 3, 100_001].shuffled(using: &generator)
            let parts = sizes.map { size in (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            let combined = try #require(Checksum.fullObject(of: parts.map { (ChecksumHasher.checksum(algorithm, of: $0), Int64($0.count)) }))
            #expect(combined == ChecksumHasher.checksum(algorithm, of: parts.flatMap { $0 }))
        }
        #expect(Checksum.fullObject(of: [(ChecksumHasher.checksum(.sha256, of: []), 0)]) == nil)
    }

    /// CRC-64/NVME's published values: the CRC catalogue's check ("123456789"), the NVM Command
    /// Set specification's 4 KiB blocks (zeros, ones, ascending and descending bytes), and the
    /// base64 the AWS SDKs' tests give for "Hello world".
    @Test func crc64nvmePublishedVectors() {
        func crc(_ bytes: [UInt8]) -> UInt64? { ChecksumHasher.checksum(.crc64nvme, of: bytes).crcValue }
        #expect(crc(Array("123456789".utf8)) == 0xAE8B_1486_0A79_9888)
        #expect(crc([UInt8](repeating: 0, count: 4096)) == 0x6482_D367_EB22_B64E)
        #expect(crc([UInt8](repeating: 0xFF, count: 4096)) == 0xC0DD_BA73_02EC_A3AC)
        #expect(crc((0..<4096).map { UInt8($0 & 0xFF) }) == 0x3E72_9F5F_6750_449C)
        #expect(crc((0..<4096).map { UInt8(255 - $0 & 0xFF) }) == 0x9A2D_F64B_8E9E_517E)
        #expect(crc([]) == 0)
        #expect(ChecksumHasher.checksum(.crc64nvme, of: Array("Hello world".utf8)).base64 == "OOJZ0D8xKts=")
        // The software path gives the same for each, whatever the CPU.
        for bytes in [Array("123456789".utf8), [UInt8](repeating: 0xFF, count: 4096)] {
            bytes.withUnsafeBytes { #expect(CRC.crc64nvmeSoftware(0, $0) == crc(bytes)) }
        }
    }

    /// The folding path against the tables: every length to 600 bytes at nine alignments (the
    /// folding starts at 64 bytes, lanes of 16), longer ones, and fed in random pieces.
    @Test func crc64nvmeFoldingAndTablesAgree() {
        var generator = SeededGenerator(seed: testSeed("crc64nvme folding vs tables"))
        let data = (0..<(300_000 + 16)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        expectSameCRC(
            data, lengths: Array(0...600) + [4095, 4096, 4097, 65_535, 65_536, 299_999], starts: Array(0..<9), pieces: 20_000,
            using: &generator, fast: CRC.crc64nvme, tables: CRC.crc64nvmeSoftware)
        print("crc64nvme uses carry-less multiply: \(CRC.crc64nvmeUsesHardware)")
    }

    /// CRC64NVME (and the others) of random ranges of a 10 MiB file, random lengths 0 ... 10 MiB
    /// at random alignments, against botocore's CrtCrc64NvmeChecksum (the `awscrt` package's C).
    @Test(.hangGuard) func crc64nvmeAgainstAWSCRT() async throws {
        var generator = SeededGenerator(seed: testSeed("crc64nvme vs awscrt"))
        let size = 10 << 20
        let bytes = (0..<(size + 64)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-crc64-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var ranges = [(0, 0), (0, size), (3, 1), (5, 63), (7, 64), (1, 65)]
        for _ in 0..<14 {
            let length = [Int.random(in: 0...256, using: &generator), Int.random(in: 0...size, using: &generator)].randomElement(using: &generator)!
            ranges.append((Int.random(in: 0...63, using: &generator), length))
        }
        let answers = try #require(
            try await runPythonPeer(
                "checksum_peer.py", input: ["file": path, "ranges": ranges.map { [$0.0, $0.1] }],
                timeout: 110) as? [[String: Any]])
        #expect(answers.count == ranges.count)
        for ((offset, length), answer) in zip(ranges, answers) {
            let slice = Array(bytes[offset..<offset + length])
            #expect(
                ChecksumHasher.checksum(.crc64nvme, of: slice).crcValue == (answer["crc64nvme"] as? NSNumber)?.uint64Value,
                "\(length) bytes at \(offset)")
        }
    }

    @Test func base64Forms() {
        let crc = ChecksumHasher.checksum(.crc32c, of: [UInt8](repeating: 0, count: 32))
        #expect(crc.base64 == "ipE2qg==")
        #expect(Checksum(algorithm: .crc32c, base64: "ipE2qg==") == crc)
        #expect(Checksum(algorithm: .crc32c, base64: "ipE2") == nil)
        #expect(ChecksumAlgorithm.sha256.base64Count == ChecksumHasher.checksum(.sha256, of: []).base64.count)
        #expect(ChecksumAlgorithm.crc32.base64Count == 8)
        #expect(ChecksumAlgorithm.crc64nvme.base64Count == 12)
        #expect(ChecksumAlgorithm.sha1.base64Count == ChecksumHasher.checksum(.sha1, of: []).base64.count)
        let crc64 = ChecksumHasher.checksum(.crc64nvme, of: Array("123456789".utf8))
        #expect(crc64.hex == "ae8b14860a799888")
        #expect(Checksum(algorithm: .crc64nvme, base64: crc64.base64) == crc64)
    }
}
