import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// The library's one call per job (issue 39): `S3Client()` configured as the AWS CLI is (here
/// from a profile in `~/.aws/config` and `~/.aws/credentials` that names the SeaweedFS endpoint),
/// `upload(file:to:)`, `upload(directory:to:)` and `sync(directory:to:)`, each object checked by
/// SHA-256 as the server stores it; progress as an `AsyncSequence`.
@Suite(.seaweed, .serialized, .hangGuard)
struct S3OneCallSeaweedTests {
    let peer = SeaweedPeer.current!

    /// A client made as `S3Client()` makes it, from a home whose AWS files name this server
    /// under the profile `AWS_PROFILE` picks; nothing of the server given in code.
    func client(_ configure: (inout S3Options) -> Void = { _ in }) throws -> S3Client {
        let home = try s3TemporaryDirectory("one-call-home")
        try FileManager.default.createDirectory(atPath: home + "/.aws", withIntermediateDirectories: true)
        try """
        [profile seaweed]
        region = \(peer.region)
        endpoint_url = \(peer.endpoint.absoluteString)
        """.write(toFile: home + "/.aws/config", atomically: true, encoding: .utf8)
        try """
        [seaweed]
        aws_access_key_id = \(peer.credentials.accessKeyID)
        aws_secret_access_key = \(peer.credentials.secretAccessKey)
        """.write(toFile: home + "/.aws/credentials", atomically: true, encoding: .utf8)
        var options = S3Options()
        options.stateDirectory = try s3TemporaryDirectory("one-call-state")
        options.partSize = 5 << 20
        configure(&options)
        let client = try S3Client(options: options, environment: ["HOME": home, "AWS_PROFILE": "seaweed"])
        #expect(client.configuration.endpoint == peer.endpoint && client.configuration.profile == "seaweed")
        #expect(client.configuration.credentials?.origin == "\(home)/.aws/credentials [seaweed]")
        return client
    }

    func prefix() -> String { "one-call-\(UUID().uuidString.prefix(8))/" }

    func write(_ bytes: [UInt8], to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func synthetic(_ length: Int64, seed: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(length))
        _ = try bytes.withUnsafeMutableBytes { try SyntheticByteSource(length: length, seed: seed).read(into: $0, at: 0) }
        return bytes
    }

    /// A small file and one of three parts, each in one call; a key ending in `/` gets the
    /// file's name. The result carries the unquoted ETag and the typed checksum.
    @Test func aFileInOneCall() async throws {
        let client = try client()
        let directory = try s3TemporaryDirectory("one-call-file")
        let prefix = prefix()
        for (name, length) in [("small.txt", Int64(70_001)), ("big é.bin", Int64(12 << 20) + 3)] {
            let bytes = try synthetic(length, seed: UInt64(length))
            try write(bytes, to: directory + "/" + name)
            let result = try await client.upload(file: directory + "/" + name, to: "s3://\(peer.bucket)/\(prefix)")
            #expect(result.location.key == prefix + name)
            let stored = try await peer.stored(key: prefix + name)
            let sha256 = try Digest.sha256(of: MemoryByteSource(bytes))
            #expect(stored.size == length && stored.sha256 == sha256, "\(name)")
            #expect(!result.eTag.contains("\""), "ETag \(result.eTag)")
            let crc = try ChecksumHasher.checksum(.crc32c, of: MemoryByteSource(bytes))
            #expect(result.checksum?.algorithm == .crc32c)
            if result.partCount == 1 {
                #expect(result.checksum == S3ObjectChecksum(fullObject: crc))
            } else {
                #expect(result.partCount == 3 && result.eTag.hasSuffix("-3"))
                // CRC32C's default type for a multipart upload is composite: the CRC of the
                // parts' CRCs, over three parts.
                let parts = try (1...3).map { number in
                    let range = (number - 1) * (5 << 20)..<min(number * (5 << 20), bytes.count)
                    return try ChecksumHasher.checksum(.crc32c, of: MemoryByteSource(Array(bytes[range])))
                }
                let composite = try #require(Checksum.composite(of: parts))
                #expect(result.checksum == S3ObjectChecksum(composite: composite))
                #expect(result.checksum?.type == .composite && result.checksum?.partCount == 3)
                #expect(result.checksum?.description == "CRC32C \(composite.s3Value)")
            }
        }
        // A destination that is no S3 URL: an error before any request.
        await #expect(throws: S3Error.self) { try await client.upload(file: directory + "/small.txt", to: "https://example.com/x") }
    }

    /// A tree in one call, byte-exact under the prefix; the same call again sends nothing;
    /// `sync` then sends what changed and, with `deletes`, removes what has no file.
    @Test func aDirectoryAndASyncInOneCallEach() async throws {
        let client = try client()
        let root = try s3TemporaryDirectory("one-call-tree")
        var expected: [String: String] = [:]
        for index in 0..<9 {
            let relative = "\(["a", "a/b", "ç d"][index % 3])/f\(index).bin"
            let bytes = try synthetic(Int64(index * 997 + 1), seed: UInt64(index))
            try write(bytes, to: root + "/" + relative)
            expected[relative] = try Digest.sha256(of: MemoryByteSource(bytes))
        }
        let big = try synthetic((11 << 20) + 1, seed: 99)
        try write(big, to: root + "/big.bin")
        expected["big.bin"] = try Digest.sha256(of: MemoryByteSource(big))
        let prefix = prefix()
        let target = "s3://\(peer.bucket)/\(prefix)"

        let first = try await client.upload(directory: root, to: target)
        #expect(first.uploaded == expected.count && first.failures.isEmpty)
        #expect(try await peer.stored(under: prefix) == expected)
        let again = try await client.upload(directory: root, to: target)
        #expect(again.uploaded == expected.count, "cp sends every file, as aws s3 cp --recursive does")

        // A file grown, one added, one removed: sync sends two, deletes one.
        let grown = try synthetic(5_000, seed: 7)
        try write(grown, to: root + "/a/f0.bin")
        expected["a/f0.bin"] = try Digest.sha256(of: MemoryByteSource(grown))
        try write([1, 2, 3], to: root + "/new.txt")
        expected["new.txt"] = try Digest.sha256(of: MemoryByteSource([1, 2, 3]))
        try FileManager.default.removeItem(atPath: root + "/a/b/f1.bin")
        expected["a/b/f1.bin"] = nil
        let synced = try await client.sync(directory: root, to: target, deletes: true)
        #expect(synced.job?.uploaded == 2 && synced.deleted == 1 && synced.unchanged == expected.count - 2)
        #expect(try await peer.stored(under: prefix) == expected)
    }

    /// A prefix copied below another by the store in one call (`copy(prefix:to:)`), then
    /// synced in one call (`sync(prefix:to:deletes:)`): the copies read back equal the
    /// objects, a second run copies nothing, an object with no source is deleted, and a
    /// destination within the source is refused before any request.
    @Test func aPrefixCopiedAndSyncedInOneCallEach() async throws {
        let client = try client()
        let root = try s3TemporaryDirectory("one-call-prefix")
        var expected: [String: String] = [:]
        for (relative, length) in [("a", 10), ("b/c", 70_001), ("big.bin", (11 << 20) + 1)] {
            let bytes = try synthetic(Int64(length), seed: UInt64(length))
            try write(bytes, to: root + "/" + relative)
            expected[relative] = try Digest.sha256(of: MemoryByteSource(bytes))
        }
        let (source, copies) = (prefix(), prefix())
        _ = try await client.upload(directory: root, to: "s3://\(peer.bucket)/\(source)")
        let copied = try await client.copy(prefix: "s3://\(peer.bucket)/\(source)", to: "s3://\(peer.bucket)/\(copies)")
        #expect(copied.copied == 3 && copied.bytesCopied == Int64(10 + 70_001 + (11 << 20) + 1))
        #expect(try await peer.stored(under: copies) == expected)

        try write([9], to: root + "/orphan")
        _ = try await client.upload(file: root + "/orphan", to: "s3://\(peer.bucket)/\(copies)orphan")
        let synced = try await client.sync(prefix: "s3://\(peer.bucket)/\(source)", to: "s3://\(peer.bucket)/\(copies)", deletes: true)
        #expect(synced.copied == 0 && synced.unchanged == 3 && synced.deleted == 1)
        #expect(try await peer.stored(under: copies) == expected)

        await #expect(throws: S3PrefixCopy.OverlappingPrefixes.self) {
            try await client.copy(prefix: "s3://\(peer.bucket)/\(source)", to: "s3://\(peer.bucket)/\(source)inner/")
        }
    }

    /// A file the job cannot send (its key is over S3's 1,024 bytes) fails the one call with
    /// `UploadJobIncomplete`, which names it; the others are stored.
    @Test func aDirectoryWithAFileThatCannotGoThrowsNamingIt() async throws {
        let client = try client()
        let root = try s3TemporaryDirectory("one-call-long")
        let deep = (0..<5).map { _ in String(repeating: "d", count: 220) }.joined(separator: "/")
        try write([1], to: root + "/" + deep + "/f")
        try write([2], to: root + "/ok")
        let prefix = prefix()
        do {
            _ = try await client.upload(directory: root, to: "s3://\(peer.bucket)/\(prefix)")
            Issue.record("a key over 1,024 bytes was not refused")
        } catch let error as UploadJobIncomplete {
            #expect(error.result.failures.count == 1 && error.result.uploaded == 1)
            #expect(error.description.hasPrefix("1 of the files were not sent: "), "\(error)")
        }
        #expect(try await peer.stored(under: prefix) == ["ok": try Digest.sha256(of: MemoryByteSource([2]))])
    }

    /// Progress as an `AsyncSequence`: a file's reports end at its length, a directory's at its
    /// file count, and both sequences finish when the work ends.
    @Test func progressAsAnAsyncSequence() async throws {
        let client = try client { $0.transfer.progressInterval = .zero }
        let root = try s3TemporaryDirectory("one-call-progress")
        let bytes = try synthetic((6 << 20) + 5, seed: 3)
        try write(bytes, to: root + "/one.bin")
        try write([9, 9], to: root + "/two.txt")
        let prefix = prefix()

        let (fileProgress, fileUpload) = client.uploadWithProgress(file: root + "/one.bin", to: "s3://\(peer.bucket)/\(prefix)one.bin")
        var reports: [UploadProgress] = []
        for await report in fileProgress { reports.append(report) }
        let result = try await fileUpload.value
        #expect(result.length == Int64(bytes.count))
        #expect(reports.last?.bytesSent == Int64(bytes.count) && reports.last?.totalBytes == Int64(bytes.count))

        let (jobProgress, job) = client.uploadWithProgress(directory: root, to: "s3://\(peer.bucket)/\(prefix)tree/")
        var last: UploadJobProgress?
        for await report in jobProgress { last = report }
        #expect(try await job.value.uploaded == 2)
        #expect(last?.filesDone == 2 && last?.walkEnded == true)
        #expect(try await peer.stored(under: prefix + "tree/").count == 2)
    }
}
