import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceS3
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Success only for what the server proved: every S3 call sluice makes, answered `200` with an
/// `<Error>` document, without the ETag it needs, with nothing, or with a cut-off document,
/// fails with a typed error; never counts (issue 37, item 3). The CLI's side is
/// Tests/e2e/test_faults.py's `test_s3_cp_refuses_a_200_with_an_error_document`.
struct S3AnswerProofTests {
    /// The calls, as the fake server tells them apart.
    enum Call: String, CaseIterable, Sendable, CustomStringConvertible {
        case putObject = "PutObject", uploadPart = "UploadPart", presignedPart = "UploadPart (presigned)"
        case create = "CreateMultipartUpload", complete = "CompleteMultipartUpload", listParts = "ListParts"
        case listUploads = "ListMultipartUploads", listObjects = "ListObjectsV2", deleteObjects = "DeleteObjects"
        case head = "HeadObject", abort = "AbortMultipartUpload"
        case copyObject = "CopyObject", uploadPartCopy = "UploadPartCopy"

        var description: String { rawValue }

        /// The call a request is (a presigned part is a part: its URL has no `x-amz-` marker
        /// the fake can see, so the presigned rows send their parts to `/presigned/`).
        init(_ request: UploadRequest) {
            let query = request.url.query ?? ""
            let copies = request.headers.contains { $0.name.lowercased() == "x-amz-copy-source" }
            switch request.method {
            case "PUT" where copies: self = query.contains("partNumber=") ? .uploadPartCopy : .copyObject
            case "PUT" where request.url.path.hasPrefix("/presigned/"): self = .presignedPart
            case "PUT": self = query.contains("partNumber=") ? .uploadPart : .putObject
            case "POST" where query.hasPrefix("uploads"): self = .create
            case "POST" where query.hasPrefix("delete"): self = .deleteObjects
            case "POST": self = .complete
            case "GET" where query.contains("list-type=2"): self = .listObjects
            case "GET" where query.hasPrefix("uploads"): self = .listUploads
            case "GET": self = .listParts
            case "HEAD": self = .head
            default: self = .abort
            }
        }

        /// The right answer's document (empty for calls that answer none).
        var document: String {
            switch self {
            case .putObject, .uploadPart, .presignedPart, .head, .abort: return ""
            case .create:
                return "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>U</UploadId></InitiateMultipartUploadResult>"
            case .complete: return "<CompleteMultipartUploadResult><ETag>\"e-1\"</ETag></CompleteMultipartUploadResult>"
            case .listParts: return "<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>"
            case .listUploads: return "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>"
            case .listObjects: return "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"
            case .deleteObjects: return "<DeleteResult></DeleteResult>"
            case .copyObject: return "<CopyObjectResult><ETag>\"e\"</ETag></CopyObjectResult>"
            case .uploadPartCopy: return "<CopyPartResult><ETag>\"e\"</ETag></CopyPartResult>"
            }
        }

        /// Whether its answer counts only with an ETag.
        var needsETag: Bool { [.putObject, .uploadPart, .presignedPart].contains(self) }

        /// Whether it sends the body's checksum, which a server may echo.
        var sendsChecksum: Bool { [.putObject, .uploadPart, .presignedPart].contains(self) }

        /// Whether an empty 2xx is a right answer: `Abort` (204 or 200), and `HeadObject`, a
        /// question whose readers check each field they use.
        var acceptsEmpty: Bool { self == .abort || self == .head }
    }

    /// What is wrong with the answer to the call under test.
    enum Fault: String, CaseIterable, Sendable, CustomStringConvertible {
        /// `200`, the ETag, and an `<Error>` document as the body.
        case errorDocument
        /// `200` and the right body, without an ETag.
        case noETag
        /// `200`, no headers, no body.
        case empty
        /// `200`, the ETag, and the right document (or an error document) cut in half.
        case truncated
        /// `200`, the ETag, the right document, and a checksum of other bytes than those sent
        /// echoed in `x-amz-checksum-crc32c` (the calls that send one).
        case wrongChecksum

        var description: String { rawValue }
    }

    static let errorDocument = #"<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>denied after all</Message><RequestId>R37</RequestId></Error>"#

    /// Answers every call as S3 does, but `faulty` with `fault`; the first `faultCount` times
    /// only, when set.
    final class FakeS3: UploadTransport {
        let faulty: Call
        let fault: Fault
        let faultCount: Int
        let seen = Mutex<[Call]>([])

        init(faulty: Call, fault: Fault, faultCount: Int = .max) {
            (self.faulty, self.fault, self.faultCount) = (faulty, fault, faultCount)
        }

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            if case .random(let source, _) = body.storage {
                // Read as a server would, so a trailer's checksum is known.
                _ = try source.forEachChunk { _ in }
            }
            let call = Call(request)
            let count = seen.withLock { seen in
                seen.append(call)
                return seen.filter { $0 == call }.count
            }
            // A copy's source: 6 MiB when the row copies in parts (two of 5 MiB), else 4 bytes.
            let length = call == .head && faulty == .uploadPartCopy ? "\(6 << 20)" : "4"
            let eTag = [HTTPHeader(name: "ETag", value: "\"e\""), HTTPHeader(name: "Content-Length", value: length)]
            var (status, headers, document) = (call == .abort ? 204 : 200, eTag, call.document)
            if call == faulty, count <= faultCount {
                status = 200
                switch fault {
                case .errorDocument: document = S3AnswerProofTests.errorDocument
                case .noETag: headers = []
                case .empty: (headers, document) = ([], "")
                case .truncated:
                    let whole = document.isEmpty ? S3AnswerProofTests.errorDocument : document
                    document = String(whole.prefix(whole.count / 2))
                case .wrongChecksum:
                    // CRC32C of "other" (base64), not of the body sent.
                    headers.append(HTTPHeader(name: "x-amz-checksum-crc32c", value: "AAAAAA=="))
                }
            }
            return UploadResponse(status: status, headers: headers, body: Data(document.utf8), bytesSent: body.length.value ?? 0, url: request.url)
        }
    }

    static func client(_ transport: FakeS3, retries: Int = 0) -> S3Client {
        var options = S3Options()
        options.partSize = 5 << 20
        options.retries = retries
        options.retryDelay = .milliseconds(1)
        options.stateDirectory = NSTemporaryDirectory() + "sluice-proof-\(UUID().uuidString.prefix(8))"
        return S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: transport)
    }

    /// Makes the call `call` (through the public operation that makes it where there is one).
    static func make(_ call: Call, with client: S3Client, over transport: FakeS3) async throws {
        let location = try S3Location(parsing: "s3://bucket/k")
        let counters = S3Counters()
        let meter = S3PartProgress(total: nil, interval: .seconds(1), report: nil)
        switch call {
        case .putObject:
            let source = S3Source(MemoryByteSource(Array("body".utf8)), identity: "memory", fingerprint: S3SourceFingerprint(size: 4))
            _ = try await client.upload(source, to: location)
        case .uploadPart:
            _ = try await client.sendParts(
                [1], of: MemoryByteSource(Array("body".utf8)), plan: try S3PartPlan(length: 4, partSize: 5 << 20), to: location,
                uploadID: "U", counters: counters, meter: meter)
        case .presignedPart:
            let source = S3Source(MemoryByteSource(Array("body".utf8)), identity: "memory", fingerprint: S3SourceFingerprint(size: 4))
            var upload = try S3PresignedPartsUpload(uploadID: "U", source: source, partSize: 5 << 20, checksum: .crc32c) { request in
                S3PresignedURL(url: "http://127.0.0.1:9/presigned/\(request.partNumber)")
            }
            upload.stateDirectory = client.options.stateDirectory
            upload.retryPolicy = client.options.retryPolicy
            _ = try await upload.run(over: transport)
        case .create: _ = try await client.createMultipartUpload(location, counters: counters)
        case .complete:
            _ = try await client.completeMultipartUpload(
                location, uploadID: "U", parts: [S3CompletedPart(partNumber: 1, eTag: "\"e\"")], lengths: [4], counters: counters)
        case .listParts: _ = try await client.listParts(location, uploadID: "U", counters: counters)
        case .listUploads: _ = try await client.listMultipartUploads(location)
        case .listObjects: _ = try await client.listObjectsPage(bucket: "bucket", prefix: "", token: nil)
        case .deleteObjects: _ = try await client.deleteObjects(bucket: "bucket", keys: ["k"])
        case .head: _ = try await client.headObject(location)
        case .abort: _ = try await client.abortMultipartUpload(location, uploadID: "U", counters: counters)
        case .copyObject, .uploadPartCopy: _ = try await client.copy(try S3Location(parsing: "s3://bucket/source"), to: location)
        }
    }

    /// Each call, right answers: it succeeds (the fake is faithful, so the table's failures are
    /// the faults').
    @Test(arguments: Call.allCases)
    func rightAnswersSucceed(call: Call) async throws {
        let transport = FakeS3(faulty: call, fault: .empty, faultCount: 0)
        try await Self.make(call, with: Self.client(transport), over: transport)
        #expect(transport.seen.withLock { $0 }.contains(call))
    }

    /// Every call x every fault: a typed failure, never a success. An `Abort` answered with
    /// nothing at all is its right answer (204 or 200, no body), and a `HeadObject` so tells
    /// nothing its readers would take for a fact.
    @Test(arguments: Call.allCases, Fault.allCases)
    func faultyAnswersFail(call: Call, fault: Fault) async throws {
        if fault == .noETag, !call.needsETag { return }
        if fault == .wrongChecksum, !call.sendsChecksum { return }
        let transport = FakeS3(faulty: call, fault: fault)
        let client = Self.client(transport)
        if fault == .empty, call.acceptsEmpty {
            try await Self.make(call, with: client, over: transport)
            return
        }
        let error = await #expect(throws: S3Error.self) { try await Self.make(call, with: client, over: transport) }
        #expect(transport.seen.withLock { $0 }.contains(call))
        switch fault {
        case .errorDocument:
            // The document's own code and status, typed: nothing parsed back from a message.
            #expect(error?.code == .server, "\(String(describing: error))")
            #expect(error?.serverCode == "AccessDenied", "\(String(describing: error))")
            #expect(error?.status == 200, "\(String(describing: error))")
        case .noETag, .empty, .truncated:
            #expect(error?.code == .malformedResponse, "\(String(describing: error))")
        case .wrongChecksum:
            // The server holds other bytes than those sent: never counted as stored.
            #expect(error?.code == .verification, "\(String(describing: error))")
        }
    }

    /// A 200 carrying an error S3 says may be retried (`InternalError`) is retried by the one
    /// retry policy, and the second, right answer counts.
    @Test(arguments: [Call.putObject, .uploadPart, .complete, .listObjects])
    func aRetryableErrorDocumentIsRetried(call: Call) async throws {
        final class Once: UploadTransport {
            let inner: FakeS3
            let answered = Mutex(false)
            init(_ inner: FakeS3) { self.inner = inner }
            func send(
                _ request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void
            ) async throws -> UploadResponse {
                var response = try await inner.send(request, body: body, options: options, progress: progress)
                if Call(request) == inner.faulty,
                    answered.withLock({
                        let first = !$0; $0 = true; return first
                    })
                {
                    response = UploadResponse(
                        status: 200, headers: response.headers,
                        body: Data("<Error><Code>InternalError</Code><Message>try again</Message></Error>".utf8),
                        bytesSent: response.bytesSent, url: request.url)
                }
                return response
            }
        }
        let fake = FakeS3(faulty: call, fault: .empty, faultCount: 0)
        let transport = Once(fake)
        var options = Self.client(fake).options
        options.retries = 1
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: transport)
        try await Self.make(call, with: client, over: fake)
        #expect(fake.seen.withLock { $0 }.filter { $0 == call }.count == 2)
    }
}

/// Secrets redacted from what servers say (issue 37, item 6): a gateway whose error message
/// echoes the request's headers carries the SSE-C key (base64, as sent), the session token and
/// the signature back; none of them is in the error's fields or its line.
struct S3EchoedSecretsTests {
    /// Answers every request 400 with an error document whose message is the request's headers.
    final class EchoingGateway: UploadTransport {
        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            let echoed = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")
            let document = "<Error><Code>InvalidRequest</Code><Message>bad headers: \(s3XMLEscape(echoed))</Message></Error>"
            return UploadResponse(status: 400, headers: [], body: Data(document.utf8), bytesSent: 0, url: request.url)
        }
    }

    @Test func aGatewayEchoingTheHeadersGetsNoSecretPrinted() async throws {
        let key = Array("0123456789abcdefghijklmnopqrstuv".utf8)
        let base64 = Data(key).base64EncodedString()
        var options = S3Options()
        options.retries = 0
        options.object.encryption = .customerKey(try S3CustomerKey(key))
        options.stateDirectory = NSTemporaryDirectory() + "sluice-echo-\(UUID().uuidString.prefix(8))"
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "AKIDECHO", secretAccessKey: "echo-secret-key-37", sessionToken: "echo-session-token-37"),
                endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: EchoingGateway())
        let source = S3Source(MemoryByteSource(Array("body".utf8)), identity: "memory", fingerprint: S3SourceFingerprint(size: 4))
        let error = await #expect(throws: S3Error.self) { try await client.upload(source, to: S3Location(parsing: "s3://bucket/k")) }
        let shown = [error?.message ?? "", "\(error.map { "\($0)" } ?? "")", (error?.underlying as? S3ServerError)?.message ?? ""]
        // The gateway did echo them (the test shows something).
        #expect(shown[0].contains("x-amz-server-side-encryption-customer-key: ***"), "\(shown[0])")
        for text in shown {
            for secret in [base64, String(decoding: key, as: UTF8.self), "echo-session-token-37", "echo-secret-key-37"] {
                #expect(!text.contains(secret), "\(text)")
            }
            #expect(!text.contains(#/Signature=[0-9a-f]{64}/#), "\(text)")
        }
    }
}
