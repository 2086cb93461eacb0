import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver

/// Inputs a hostile user tries on S3 uploads; each ends in the right request or a clear error
/// before any byte is sent. The CLI's side is Tests/e2e/test_s3_hostile.py.
@Suite(.timeLimit(.minutes(1)))
struct S3HostileTests {
    /// A client of the loopback receiver (it answers every request 200 and records its path).
    func client(of receiver: LoopbackReceiver, transport: TransportKind) -> S3Client {
        var options = S3Options()
        options.partSize = 5 << 20
        options.retries = 0
        options.stateDirectory = NSTemporaryDirectory() + "sluice-hostile-\(UUID().uuidString.prefix(8))"
        let configuration = S3Configuration(credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
                                            endpoint: URL(string: receiver.url)!)
        return S3Client(configuration: configuration, options: options, transport: transport)
    }

    /// URLSession on Linux (libcurl inside FoundationNetworking, without CURLOPT_PATH_AS_IS)
    /// would send `/bucket/a/../b` as `/bucket/b`: another path than the one signed, maybe
    /// another key. Refused before the first request (PutObject, or CreateMultipartUpload).
    @Test(arguments: ["a/../b", "./x", "a/./b", "a/..", "../up"], [1000, 6 << 20])
    func urlSessionRefusesKeysWithDotSegmentsBeforeAnyByte(key: String, length: Int) async throws {
        #if canImport(FoundationNetworking)
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let client = client(of: receiver, transport: .urlsession)
        let source = S3Source(SyntheticByteSource(length: Int64(length), seed: 1), identity: "synthetic:\(length):1",
                              fingerprint: S3SourceFingerprint(size: Int64(length)))
        let error = await #expect(throws: S3Error.self) {
            try await client.upload(source, to: S3Location(bucket: "bucket", key: key))
        }
        #expect(error?.code == .invalidLocation, "\(String(describing: error))")
        #expect(error?.message.contains("curl transport") == true, "\(String(describing: error))")
        #expect(error?.uploadID == nil)
        #expect(receiver.completed.isEmpty && receiver.failures.isEmpty, "\(receiver.completed.map(\.target))")
        #endif
    }

    /// Keys that only look like dot segments, and `//`, go through URLSession as written.
    @Test(arguments: ["a/.../b", "a/.b/c", "a//b", "a/b."])
    func urlSessionSendsOtherKeysAsWritten(key: String) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let client = client(of: receiver, transport: .urlsession)
        let source = S3Source(MemoryByteSource(Array("body".utf8)), identity: "memory", fingerprint: S3SourceFingerprint(size: 4))
        _ = try await client.upload(source, to: S3Location(bucket: "bucket", key: key))
        #expect(receiver.completed.map(\.path) == ["/bucket/" + key])
    }

    /// A presigned URL (`sluice s3 presign`, then `sluice upload --transport urlsession`) with
    /// dot segments is refused the same way; the same URL without a signature is sent as
    /// URLSession sends it (normalised, as `curl` does by default).
    @Test func urlSessionRefusesPresignedURLsWithDotSegments() async throws {
        #if canImport(FoundationNetworking)
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let signed = try UploadRequest(url: receiver.url + "bucket/a/../b?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00", method: "PUT")
        let error = await #expect(throws: UploadError.self) {
            try await URLSessionTransport().send(signed, body: .bytes(MemoryByteSource([1, 2])), options: UploadOptions()) { _ in }
        }
        #expect(error?.code == .invalidURL && error?.message.contains("curl transport") == true, "\(String(describing: error))")
        #expect(receiver.completed.isEmpty)
        let plain = try UploadRequest(url: receiver.url + "bucket/a/../b", method: "PUT")
        let response = try await URLSessionTransport().send(plain, body: .bytes(MemoryByteSource([1, 2])), options: UploadOptions()) { _ in }
        #expect(response.status == 200)
        #expect(receiver.completed.map(\.path) == ["/bucket/b"])
        #endif
    }
}
