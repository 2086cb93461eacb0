import Foundation
import Synchronization
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `s3 sync --checksum`'s decisions (`SyncContentCheck`), each branch, against a scripted server
/// that answers `HeadObject` as told, and lies where told (a checksum of the wrong length, base64
/// that is not, a part count that is not a number): the lie leaves the object with less to
/// compare, never a crash. The real servers' side is Tests/e2e/test_s3_sync_checksum.py.
struct SyncContentCheckTests {
    /// Answers HEAD of `/bucket/KEY` (with `?partNumber=1`: the entry for `KEY#1`) with its
    /// status and headers; counts the requests.
    final class ScriptedServer: UploadTransport {
        let answers: [String: (status: Int, headers: [String: String])]
        let requests = Mutex<[String]>([])

        init(_ answers: [String: (status: Int, headers: [String: String])]) { self.answers = answers }

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            let key = String(request.url.path.dropFirst("/bucket/".count)) + ((request.url.query ?? "").contains("partNumber=1") ? "#1" : "")
            requests.withLock { $0.append("\(request.method) \(key)") }
            let answer = answers[key] ?? (404, [:])
            return UploadResponse(
                status: answer.status, headers: answer.headers.map { HTTPHeader(name: $0.key, value: $0.value) }, body: Data(), bytesSent: 0,
                url: request.url)
        }
    }

    /// A file of `bytes` in a fresh directory.
    static func file(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "sluice-content-\(UUID().uuidString.prefix(8))"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    static let data: [UInt8] = (0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    static let small = Array(data.prefix(1000))

    static func md5(_ bytes: some Collection<UInt8>) -> String {
        let digest = Digest(.md5)
        digest.update(Array(bytes))
        return digest.finalizeHex()
    }

    /// The composite of `algorithm` over `bytes` in parts of `partSize`.
    static func composite(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8], partSize: Int) -> CompositeChecksum {
        let parts = stride(from: 0, to: bytes.count, by: partSize).map {
            ChecksumHasher.checksum(algorithm, of: Array(bytes[$0..<min($0 + partSize, bytes.count)]))
        }
        return Checksum.composite(of: parts)!
    }

    /// `compare` of a file holding `bytes` with the object `listed` (ETag), the server answering
    /// `answers` (keyed `k` and `k#1`): the verdict and the requests made.
    func check(
        _ bytes: [UInt8], eTag: String, _ answers: [String: (status: Int, headers: [String: String])]
    ) async throws -> (SyncContentCheck.Verdict, [String]) {
        let server = ScriptedServer(answers)
        var options = S3Options()
        options.retries = 0
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: server)
        let path = try Self.file(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try await SyncContentCheck(client: client, bucket: "bucket").compare(
            file: path, size: Int64(bytes.count), with: S3ListedObject(key: "k", size: Int64(bytes.count), lastModified: 0, eTag: eTag))
        return (verdict, server.requests.withLock { $0 })
    }

    @Test func aSinglePartObjectWhoseETagIsTheFilesMD5IsTheSameWithNoRequest() async throws {
        let (verdict, requests) = try await check(Self.small, eTag: "\"\(Self.md5(Self.small).uppercased())\"", [:])
        #expect(verdict == .same(basis: "ETag (MD5)"))
        #expect(requests.isEmpty)
    }

    @Test func aSinglePartObjectWhoseETagIsAnotherMD5DiffersAfterOneHead() async throws {
        let other = Self.md5([1, 2, 3])
        let (verdict, requests) = try await check(Self.small, eTag: "\"\(other)\"", ["k": (200, ["ETag": "\"\(other)\"", "Content-Length": "1000"])])
        #expect(verdict == .differs(basis: "ETag (MD5)"))
        #expect(requests == ["HEAD k"])
    }

    @Test func anSSEKMSObjectIsComparedByItsStoredChecksumOrNotAtAll() async throws {
        let other = Self.md5([1, 2, 3])
        let crc = ChecksumHasher.checksum(.crc64nvme, of: Self.small).base64
        let kms = ["ETag": "\"\(other)\"", "Content-Length": "1000", "x-amz-server-side-encryption": "aws:kms"]
        var (verdict, _) = try await check(Self.small, eTag: other, ["k": (200, kms.merging(["x-amz-checksum-crc64nvme": crc]) { $1 })])
        #expect(verdict == .same(basis: "crc64nvme"))
        // Another algorithm than the first pass's: a second read, the same verdict.
        let crc32 = ChecksumHasher.checksum(.crc32, of: Self.small).base64
        (verdict, _) = try await check(Self.small, eTag: other, ["k": (200, kms.merging(["x-amz-checksum-crc32": crc32]) { $1 })])
        #expect(verdict == .same(basis: "crc32"))
        (verdict, _) = try await check(Self.small, eTag: other, ["k": (200, kms)])
        #expect(verdict == .unknown)
        // SSE-C without its key: S3 refuses the HEAD (400).
        (verdict, _) = try await check(Self.small, eTag: other, ["k": (400, [:])])
        #expect(verdict == .unknown)
    }

    @Test func anObjectGoneOrOfAnotherSizeSinceTheListingDiffers() async throws {
        var (verdict, _) = try await check(Self.small, eTag: "\"abc-2\"", [:])
        #expect(verdict == .differs(basis: "object gone"))
        (verdict, _) = try await check(Self.small, eTag: "\"abc-2\"", ["k": (200, ["ETag": "\"abc-2\"", "Content-Length": "999"])])
        #expect(verdict == .differs(basis: "size"))
    }

    @Test func aFullObjectChecksumDecides() async throws {
        let crc = ChecksumHasher.checksum(.crc32c, of: Self.data)
        let headers = ["ETag": "\"abc-2\"", "Content-Length": "\(Self.data.count)", "x-amz-checksum-type": "FULL_OBJECT"]
        var (verdict, requests) = try await check(Self.data, eTag: "\"abc-2\"", ["k": (200, headers.merging(["x-amz-checksum-crc32c": crc.base64]) { $1 })])
        #expect(verdict == .same(basis: "crc32c"))
        #expect(requests == ["HEAD k"])
        let wrong = Checksum(algorithm: .crc32c, crc: (crc.crcValue! ^ 1)).base64
        (verdict, _) = try await check(Self.data, eTag: "\"abc-2\"", ["k": (200, headers.merging(["x-amz-checksum-crc32c": wrong]) { $1 })])
        #expect(verdict == .differs(basis: "crc32c"))
    }

    @Test func aCompositeChecksumIsRecomputedWithPartOnesLength() async throws {
        let partSize = 6 << 20 + 12_345
        let composite = Self.composite(.crc32c, Self.data, partSize: partSize)
        let answers: [String: (status: Int, headers: [String: String])] = [
            "k": (200, ["ETag": "\"abc-2\"", "Content-Length": "\(Self.data.count)", "x-amz-checksum-crc32c": composite.s3Value]),
            "k#1": (200, ["ETag": "\"abc-2\"", "Content-Length": "\(partSize)", "x-amz-mp-parts-count": "2"]),
        ]
        let (verdict, requests) = try await check(Self.data, eTag: "\"abc-2\"", answers)
        #expect(verdict == .same(basis: "composite crc32c in parts of \(partSize)"))
        #expect(requests == ["HEAD k", "HEAD k#1"])
        // The same composite cut at the AWS CLI's 8 MiB: another value, the file differs.
        var wrongParts = answers
        wrongParts["k#1"] = (200, ["Content-Length": "\(8 << 20)", "x-amz-mp-parts-count": "2"])
        let (other, _) = try await check(Self.data, eTag: "\"abc-2\"", wrongParts)
        #expect(other == .differs(basis: "composite crc32c in parts of \(8 << 20)"))
    }

    @Test func anUntypedChecksumWithoutItsCountIsEitherWholeOrComposite() async throws {
        // moto: a composite CRC32C with neither `-N` nor `x-amz-checksum-type`.
        let composite = Self.composite(.crc32c, Self.data, partSize: 5 << 20)
        let answers: [String: (status: Int, headers: [String: String])] = [
            "k": (200, ["ETag": "\"abc-3\"", "Content-Length": "\(Self.data.count)", "x-amz-checksum-crc32c": composite.checksum.base64]),
            "k#1": (200, ["Content-Length": "\(5 << 20)", "x-amz-mp-parts-count": "3"]),
        ]
        let (verdict, _) = try await check(Self.data, eTag: "\"abc-3\"", answers)
        #expect(verdict == .same(basis: "crc32c, whole or composite in parts of \(5 << 20) (the server does not say which)"))
    }

    @Test func aMultipartETagWithNoChecksumIsTheMD5OfThePartsMD5s() async throws {
        // The AWS CLI's 8 MiB parts; a server that ignores ?partNumber (the whole object, no
        // part count): the 8 MiB guess fits 2 parts.
        let parts = [Array(Self.data[..<(8 << 20)]), Array(Self.data[(8 << 20)...])]
        let digest = Digest(.md5)
        for part in parts {
            let one = Digest(.md5)
            one.update(part)
            digest.update(one.finalize())
        }
        let eTag = "\"\(digest.finalizeHex())-2\""
        let whole = ["ETag": eTag, "Content-Length": "\(Self.data.count)"]
        var (verdict, _) = try await check(Self.data, eTag: eTag, ["k": (200, whole), "k#1": (200, whole)])
        #expect(verdict == .same(basis: "ETag (MD5 of the MD5s of parts of \(8 << 20))"))
        // SSE-KMS: that ETag is no MD5; nothing to compare.
        (verdict, _) = try await check(Self.data, eTag: eTag, ["k": (200, whole.merging(["x-amz-server-side-encryption": "aws:kms"]) { $1 })])
        #expect(verdict == .unknown)
        // A part count no part size explains (3 parts of 12 MiB: not 8 MiB, not sluice's plan).
        let odd = whole.merging(["ETag": "\"\(Self.md5([1]))-3\""]) { $1 }
        (verdict, _) = try await check(Self.data, eTag: odd["ETag"]!, ["k": (200, odd), "k#1": (200, odd)])
        #expect(verdict == .unknown)
    }

    /// A server that lies: every garbled value is left out, and the object is compared by what
    /// remains (here nothing: `.unknown`, size and time for the caller).
    @Test(arguments: [
        ["x-amz-checksum-crc64nvme": "AAAA"],  // 3 bytes, not 8
        ["x-amz-checksum-crc32c": "!!!!####"],  // not base64
        ["x-amz-checksum-crc32c": "AAAAAA==-x"],  // a count that is not a number
        ["x-amz-checksum-sha256": String(repeating: "A", count: 200)],  // past the bound
        ["x-amz-checksum-crc32": "AAAAAA==-0"],  // zero parts
    ])
    func aLyingServerLeavesTheObjectUnknownNeverACrash(_ lie: [String: String]) async throws {
        let headers = ["ETag": "\"\(Self.md5([9]))\"", "Content-Length": "1000", "x-amz-server-side-encryption": "aws:kms"].merging(lie) { $1 }
        let (verdict, _) = try await check(Self.small, eTag: headers["ETag"]!, ["k": (200, headers)])
        #expect(verdict == .unknown)
        // A multipart object too, with a part count that is not a number.
        let multipart = headers.merging(["ETag": "\"abc-2\"", "x-amz-mp-parts-count": "two"]) { $1 }
        let (other, _) = try await check(Self.small, eTag: "\"abc-2\"", ["k": (200, multipart), "k#1": (200, multipart)])
        #expect(other == .unknown)
    }

    @Test func theHeadAsksForChecksums() async throws {
        final class Asked: UploadTransport {
            let headers = Mutex<[String]>([])
            func send(
                _ request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void
            ) async throws -> UploadResponse {
                headers.withLock { $0 = request.headers.map { "\($0.name.lowercased()): \($0.value)" } }
                return UploadResponse(status: 404, headers: [], body: Data(), bytesSent: 0, url: request.url)
            }
        }
        let asked = Asked()
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            transport: asked)
        #expect(try await client.headObject(S3Location(bucket: "bucket", key: "k")) == nil)
        #expect(asked.headers.withLock { $0 }.contains("x-amz-checksum-mode: ENABLED"))
    }
}
