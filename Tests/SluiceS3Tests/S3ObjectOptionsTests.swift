import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `S3ObjectOptions`: the headers of each request against botocore's serializer for the same
/// call, and the refusals before anything is sent.
@Suite struct S3ObjectOptionsTests {
    static let keyBytes = Array("0123456789abcdef0123456789abcdef".utf8)
    static let date = Date(timeIntervalSince1970: 2_000_000_000)

    /// Every option set, the botocore parameters that mean the same.
    static func cases() throws -> [(options: S3Options, botocore: [String: Any])] {
        var everything = S3Options()
        everything.object.contentType = "text/html; charset=utf-8"
        everything.object.cacheControl = "max-age=60"
        everything.object.contentDisposition = "attachment; filename=\"a b.txt\""
        everything.object.contentEncoding = "gzip"
        everything.object.contentLanguage = "fr"
        everything.object.expires = date
        everything.object.metadata = [S3Pair("owner", "ops team"), S3Pair("build", "42")]
        everything.object.storageClass = "STANDARD_IA"
        everything.object.tags = [S3Pair("team", "data & ops"), S3Pair("tier", "a=b")]
        everything.object.acl = "bucket-owner-full-control"
        everything.object.expectedBucketOwner = "123456789012"
        everything.object.objectLockMode = "GOVERNANCE"
        everything.object.objectLockRetainUntil = date
        everything.object.objectLockLegalHold = true
        everything.object.encryption = .kms(
            S3KMSEncryption(
                keyID: "alias/data", context: Data(#"{"a":"b"}"#.utf8).base64EncodedString(),
                bucketKey: true))
        everything.object.condition = .noClobber
        let everythingBotocore: [String: Any] = [
            "ContentType": "text/html; charset=utf-8", "CacheControl": "max-age=60", "ContentDisposition": "attachment; filename=\"a b.txt\"",
            "ContentEncoding": "gzip", "ContentLanguage": "fr", "Expires": 2_000_000_000, "Metadata": ["owner": "ops team", "build": "42"],
            "StorageClass": "STANDARD_IA", "Tagging": "team=data%20%26%20ops&tier=a%3Db", "ACL": "bucket-owner-full-control",
            "ExpectedBucketOwner": "123456789012", "ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": 2_000_000_000,
            "ObjectLockLegalHoldStatus": "ON", "ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "alias/data",
            "SSEKMSEncryptionContext": Data(#"{"a":"b"}"#.utf8).base64EncodedString(), "BucketKeyEnabled": true, "IfNoneMatch": "*", "ChecksumAlgorithm": "CRC32C",
        ]
        var customer = S3Options()
        customer.object.encryption = .customerKey(try S3CustomerKey(keyBytes))
        customer.object.condition = .ifMatch("\"abc\"")
        customer.object.objectLockLegalHold = false
        customer.checksum = .crc64nvme
        let customerBotocore: [String: Any] = [
            "SSECustomerAlgorithm": "AES256", "SSECustomerKey": Data(keyBytes).base64EncodedString(), "IfMatch": "\"abc\"",
            "ObjectLockLegalHoldStatus": "OFF", "ChecksumAlgorithm": "CRC64NVME", "ChecksumType": "FULL_OBJECT",
        ]
        var plain = S3Options()
        plain.object.encryption = .s3
        plain.checksum = .crc32
        plain.checksumType = .fullObject
        let plainBotocore: [String: Any] = ["ServerSideEncryption": "AES256", "ChecksumAlgorithm": "CRC32", "ChecksumType": "FULL_OBJECT"]
        var dual = S3Options()
        dual.object.encryption = .kms(S3KMSEncryption(dualLayer: true))
        dual.checksum = .sha256
        dual.checksumType = .composite
        let dualBotocore: [String: Any] = ["ServerSideEncryption": "aws:kms:dsse", "ChecksumAlgorithm": "SHA256", "ChecksumType": "COMPOSITE"]
        return [(everything, everythingBotocore), (customer, customerBotocore), (plain, plainBotocore), (dual, dualBotocore)]
    }

    /// botocore's members of each operation (the rest of a case's parameters are not in its model).
    static let members: [String: Set<String>] = {
        let object: Set<String> = [
            "ContentType", "CacheControl", "ContentDisposition", "ContentEncoding", "ContentLanguage", "Expires",
            "Metadata", "StorageClass", "Tagging", "ACL", "ExpectedBucketOwner", "ObjectLockMode",
            "ObjectLockRetainUntilDate", "ObjectLockLegalHoldStatus", "ServerSideEncryption", "SSEKMSKeyId",
            "SSEKMSEncryptionContext", "BucketKeyEnabled", "SSECustomerAlgorithm", "SSECustomerKey",
        ]
        let customer: Set<String> = ["SSECustomerAlgorithm", "SSECustomerKey", "ExpectedBucketOwner"]
        return [
            "PutObject": object.union(["IfNoneMatch", "IfMatch"]),
            "CreateMultipartUpload": object.union(["ChecksumAlgorithm", "ChecksumType"]),
            "UploadPart": customer,
            "CompleteMultipartUpload": customer.union(["IfNoneMatch", "IfMatch", "ChecksumType", "ChecksumCRC64NVME", "ChecksumCRC32"]),
        ]
    }()

    @Test(.hangGuard) func headersEqualBotocoresForTheSameCall() async throws {
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "SECRET"), region: "us-east-1",
            endpoint: URL(string: "http://127.0.0.1:9")!)
        var requests: [[String: Any]] = []
        var ours: [[String: String]] = []
        // Complete of a two-part upload: the full-object checksum is the parts' combined.
        let parts = [Array("first part ".utf8), Array("second".utf8)]
        for (options, botocore) in try Self.cases() {
            let client = S3Client(configuration: configuration, options: options)
            var completed: [S3CompletedPart] = []
            var extra: [String: Any] = [:]
            if let algorithm = options.checksum {
                completed = parts.enumerated().map { index, part in
                    S3CompletedPart(partNumber: index + 1, eTag: "e", checksums: [algorithm: ChecksumHasher.checksum(algorithm, of: part).base64])
                }
                if options.effectiveChecksumType == .fullObject {
                    extra["Checksum\(algorithm.s3Name)"] = ChecksumHasher.checksum(algorithm, of: parts.flatMap { $0 }).base64
                }
            }
            let built: [(String, [SigV4Header])] = [
                ("PutObject", options.object.headers(for: .putObject)),
                ("CreateMultipartUpload", client.createMultipartUploadHeaders),
                ("UploadPart", options.object.headers(for: .uploadPart)),
                ("CompleteMultipartUpload", client.completeMultipartUploadHeaders(completed, lengths: parts.map { Int64($0.count) })),
            ]
            for (operation, headers) in built {
                var params = botocore.merging(extra) { $1 }.filter { Self.members[operation]!.contains($0.key) }
                if operation == "CompleteMultipartUpload", params["ChecksumType"] as? String == "COMPOSITE" { params["ChecksumType"] = nil }
                params["Bucket"] = "b"
                params["Key"] = "k"
                if operation == "UploadPart" || operation == "CompleteMultipartUpload" { params["UploadId"] = "u" }
                if operation == "UploadPart" { params["PartNumber"] = 1 }
                if operation == "CompleteMultipartUpload" { params["MultipartUpload"] = ["Parts": [["PartNumber": 1, "ETag": "e"]]] }
                requests.append(["operation": operation, "params": params])
                ours.append(Dictionary(headers.map { ($0.name.lowercased(), $0.value) }) { first, _ in first })
            }
        }
        let answers = try #require(try await runPythonPeer("s3_headers_peer.py", input: requests) as? [[String: String]])
        #expect(answers.count == ours.count)
        for (index, (theirs, mine)) in zip(answers, ours).enumerated() {
            var theirs = theirs
            theirs["host"] = nil
            let operation = requests[index]["operation"] as? String ?? ""
            #expect(mine == theirs, "case \(index / 4), \(operation)")
        }
    }

    /// Bad values and combinations: one line each, before anything is sent.
    @Test func refusedBeforeSending() throws {
        func refusal(_ configure: (inout S3Options) throws -> Void) throws -> String? {
            var options = S3Options()
            try configure(&options)
            do { try options.validate() } catch { return error.code == .invalidOption ? error.message : "wrong code \(error.code)" }
            return nil
        }
        #expect(throws: S3Error.self) { try S3CustomerKey(Array(Self.keyBytes.prefix(31))) }
        #expect(try refusal { $0.object.tags = (0...10).map { S3Pair("k\($0)", "v") } }?.contains("11 tags") == true)
        #expect(try refusal { $0.object.tags = [S3Pair(String(repeating: "k", count: 129), "v")] } != nil)
        #expect(try refusal { $0.object.tags = [S3Pair("k", String(repeating: "v", count: 257))] } != nil)
        #expect(try refusal { $0.object.tags = [S3Pair("k", "1"), S3Pair("k", "2")] } != nil)
        #expect(try refusal { $0.object.tags = [S3Pair("k", "data & ops")] }?.contains("S3 allows letters") == true)
        #expect(try refusal { $0.object.tags = [S3Pair("aws:k", "v")] }?.contains("reserved") == true)
        #expect(try refusal { $0.object.tags = [S3Pair("équipe", "données 2024 +-=._:/@")] } == nil)
        // A value quoted in a message keeps it one line.
        #expect(try refusal { $0.object.metadata = [S3Pair("k\ny", "v")] }?.contains("'k\\u{A}y'") == true)
        #expect(try refusal { $0.object.tags = (0..<10).map { S3Pair("k\($0)", String(repeating: "v", count: 256)) } } == nil)
        #expect(try refusal { $0.object.metadata = [S3Pair("big", String(repeating: "x", count: 2046))] }?.contains("2048") == true)
        #expect(try refusal { $0.object.metadata = [S3Pair("big", String(repeating: "x", count: 2045))] } == nil)
        #expect(try refusal { $0.object.metadata = [S3Pair("name", "café")] }?.contains("RFC 2047") == true)
        #expect(try refusal { $0.object.metadata = [S3Pair("a b", "x")] } != nil)
        #expect(try refusal { $0.object.acl = "public" } != nil)
        #expect(try refusal { $0.object.expectedBucketOwner = "12345" } != nil)
        #expect(try refusal { $0.object.objectLockMode = "GOVERNANCE" } != nil)
        #expect(
            try refusal {
                $0.object.objectLockMode = "STRICT"; $0.object.objectLockRetainUntil = Self.date
            } != nil)
        #expect(try refusal { $0.object.encryption = .kms(S3KMSEncryption(context: "not base64 json")) } != nil)
        #expect(try refusal { $0.object.condition = .ifMatch("") } != nil)
        #expect(
            try refusal {
                $0.checksum = .crc64nvme; $0.checksumType = .composite
            }?.contains("full-object only") == true)
        #expect(
            try refusal {
                $0.checksum = .sha256; $0.checksumType = .fullObject
            } != nil)
        #expect(
            try refusal {
                $0.checksum = nil; $0.checksumType = .fullObject
            } != nil)
        #expect(
            try refusal {
                $0.checksum = .crc32c; $0.checksumType = .fullObject
            } == nil)
    }

    /// The key is never shown: its description and the record keep a keyed fingerprint only.
    @Test func customerKeyIsNeverShown() throws {
        let key = try S3CustomerKey(Self.keyBytes)
        let base64 = Data(Self.keyBytes).base64EncodedString()
        #expect(!"\(key)".contains(base64))
        #expect(!"\(key)".contains("0123456789abcdef"))
        #expect(key.fingerprint.count == 32)
        #expect(key.fingerprint != (try S3CustomerKey(Array(Self.keyBytes.reversed()))).fingerprint)
        #expect(key.md5Base64 == "hRasmdxgYDKV3nvbahU1MA==")  // botocore's for the same key
    }
}

/// Object options against the SeaweedFS scripts/test.sh starts, read back by boto3
/// (`Tests/Peers/s3_readback.py`).
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct S3ObjectOptionsSeaweedTests {
    let peer = SeaweedPeer.current!

    func client(_ configure: (inout S3Options) -> Void = { _ in }) throws -> S3Client {
        try peer.client(state: "s3-object-options") {
            $0.retryDelay = .milliseconds(10)
            $0.partSize = 5 << 20
            configure(&$0)
        }
    }

    func upload(_ client: S3Client, length: Int64, seed: UInt64, to location: S3Location) async throws -> S3UploadResult {
        let bytes = SyntheticByteSource(length: length, seed: seed)
        return try await client.upload(
            S3Source(bytes, identity: "synthetic:\(length):\(seed)", fingerprint: S3SourceFingerprint(size: length)),
            to: location)
    }

    func readBack(_ location: S3Location, customerKey: [UInt8]? = nil) async throws -> [String: Any] {
        var input: [String: Any] = [
            "endpoint": peer.endpoint.absoluteString, "region": peer.region, "access_key": peer.credentials.accessKeyID,
            "secret_key": peer.credentials.secretAccessKey, "bucket": location.bucket, "key": location.key,
        ]
        if let customerKey { input["sse_c_key"] = Data(customerKey).base64EncodedString() }
        return try #require(try await runPythonPeer("s3_readback.py", input: input) as? [String: Any])
    }

    func location() throws -> S3Location {
        try S3Location(bucket: peer.bucket, key: "options/\(UUID().uuidString.prefix(8)).bin")
    }

    /// A FULL_OBJECT CRC64NVME multipart upload: the part CRCs combined are what the server
    /// reports for the object (HeadObject, checksum mode), and equal the CRC of the whole source.
    @Test func fullObjectCRC64NVMEOfAMultipartUploadIsTheWholeFilesCRC() async throws {
        let target = try location()
        let length: Int64 = (12 << 20) + 5
        let result = try await upload(try client { $0.checksum = .crc64nvme }, length: length, seed: 64, to: target)
        #expect(result.partCount == 3)
        let whole = try ChecksumHasher.checksum(.crc64nvme, of: SyntheticByteSource(length: length, seed: 64))
        #expect(result.checksum == S3ObjectChecksum(fullObject: whole))
        #expect(result.checksum?.description == "CRC64NVME \(whole.base64)")
        let head = try #require(try await readBack(target)["head"] as? [String: Any])
        #expect(head["ChecksumCRC64NVME"] as? String == whole.base64)
        #expect(head["ChecksumType"] as? String == "FULL_OBJECT")
    }

    /// `--no-clobber` on both paths: a second PutObject and a multipart upload of an existing
    /// key are refused (`.objectExists`), the object kept, and the multipart upload aborted.
    @Test func noClobberKeepsAnExistingObjectOnBothPaths() async throws {
        let target = try location()
        _ = try await upload(try client(), length: 1000, seed: 1, to: target)
        let guarded = try client { $0.object.condition = .noClobber }
        for length: Int64 in [2000, 11 << 20] {
            do {
                _ = try await upload(guarded, length: length, seed: 2, to: target)
                Issue.record("a \(length)-byte upload over an existing object was not refused")
            } catch let error as S3Error {
                #expect(error.code == .objectExists, "\(error)")
                #expect(error.uploadID == nil)
            }
        }
        let head = try #require(try await readBack(target)["head"] as? [String: Any])
        #expect((head["ContentLength"] as? NSNumber)?.intValue == 1000)
        #expect(try await guarded.listMultipartUploads(target).isEmpty)
        // A new key is written.
        let fresh = try location()
        #expect(try await upload(guarded, length: 3000, seed: 3, to: fresh).length == 3000)
    }

    /// Attributes, metadata and tags read back; an SSE-C object readable with its key only.
    @Test func attributesAndCustomerKeyReadBack() async throws {
        let target = try location()
        let key = S3ObjectOptionsTests.keyBytes
        let client = try client {
            $0.object.contentType = "text/csv"
            $0.object.cacheControl = "max-age=60"
            $0.object.contentDisposition = "attachment"
            $0.object.metadata = [S3Pair("owner", "ops")]
            $0.object.tags = [S3Pair("team", "data ops")]
            $0.object.encryption = .customerKey(try! S3CustomerKey(key))
        }
        _ = try await upload(client, length: 6 << 20, seed: 9, to: target)
        let withKey = try await readBack(target, customerKey: key)
        let head = try #require(withKey["head"] as? [String: Any])
        #expect(head["ContentType"] as? String == "text/csv")
        #expect(head["CacheControl"] as? String == "max-age=60")
        #expect(head["ContentDisposition"] as? String == "attachment")
        #expect((head["Metadata"] as? [String: String])?["owner"] == "ops")
        #expect(withKey["tags"] as? [String: String] == ["team": "data ops"])
        let withoutKey = try await readBack(target)
        #expect(withoutKey["status"] as? Int != 200)
    }
}
