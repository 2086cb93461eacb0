import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Inputs a hostile user tries on S3 uploads; each ends in the right request or a clear error
/// before any byte is sent. The CLI's side is Tests/e2e/test_s3_hostile.py.
@Suite(.hangGuard)
struct S3HostileTests {
    /// A client of the loopback receiver (it answers every request 200 and records its path).
    func client(of receiver: LoopbackReceiver, transport: TransportKind) -> S3Client {
        var options = S3Options()
        options.partSize = 5 << 20
        options.retries = 0
        options.stateDirectory = NSTemporaryDirectory() + "sluice-hostile-\(UUID().uuidString.prefix(8))"
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
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
        let source = S3Source(
            SyntheticByteSource(length: Int64(length), seed: 1), identity: "synthetic:\(length):1",
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

    /// Endpoints a user may mistype; each is refused when the configuration is resolved, before
    /// `s3 cp` connects or `s3 presign` prints a URL (before: a port of 99999 was presigned, and
    /// `user:pass@` went on to the request).
    @Test(arguments: [
        "ftp://x", "http://[::1", "http://", "http://h:99999", "https://h:0", "http://user:pass@h", "http://user@h:9000",
        "http://h/a?x=1", "http://h#f", "127.0.0.1:9000",
    ])
    func endpointsThatCannotBeRightAreConfigurationErrors(endpoint: String) {
        let error = #expect(throws: S3Error.self) {
            try S3Configuration.resolve(S3ConfigurationOverrides(endpointURL: endpoint), environment: [:], home: "/nonexistent")
        }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("pass@") == false, "the password is not repeated: \(String(describing: error))")
    }

    /// A resume record that was truncated, edited or copied from another object is refused in
    /// one line (before: a part size of 0 divided by zero and crashed), and a directory that
    /// cannot hold records is found before an upload exists.
    @Test func unsoundRecordsAndUnusableDirectoriesAreStateErrors() throws {
        let directory = try s3TemporaryDirectory("s3-hostile-state")
        let store = S3StateStore(directory: directory)
        let length: Int64 = 20 << 20
        let record = S3UploadRecord(
            endpoint: "http://127.0.0.1:1", bucket: "b", key: "k", uploadID: "U1", source: "file:/x",
            fingerprint: S3SourceFingerprint(size: length, device: 1, inode: 2, modificationTime: 3, changeTime: 4),
            plan: try S3PartPlan(length: length, partSize: 5 << 20), checksum: .crc32c, createdAt: 1)
        func load() throws -> S3UploadRecord? { try store.load(endpoint: record.endpoint, bucket: "b", key: "k", source: "file:/x") }
        func refusal(_ text: String) {
            let error = #expect(throws: S3Error.self) { try load() }
            #expect(error?.code == .state && error?.message.contains(text) == true, "\(String(describing: error))")
            #expect(error?.message.contains("\n") == false)
        }
        try store.save(record)
        #expect(try load() == record)
        for (edit, text) in [
            ({ (r: inout S3UploadRecord) in r.plan.partSize = 0 }, "part plan"),
            ({ (r: inout S3UploadRecord) in r.plan.partSize = 1 << 40 }, "part plan"),
            ({ (r: inout S3UploadRecord) in r.plan.length = 1 << 20 }, "part plan"),
            ({ (r: inout S3UploadRecord) in r.uploadID = "" }, "names no upload"),
        ] {
            var edited = record
            edit(&edited)
            try store.save(edited)
            refusal(text)
        }
        // Another key's record copied over this one's file.
        var other = record
        other.key = "other"
        try store.save(other)
        try FileManager.default.removeItem(atPath: store.path(of: record))
        try FileManager.default.copyItem(atPath: store.path(of: other), toPath: store.path(of: record))
        refusal("it is the record of file:/x to s3://b/other")
        // Truncated.
        let data = try Data(contentsOf: URL(fileURLWithPath: store.path(of: other)))
        try data.prefix(40).write(to: URL(fileURLWithPath: store.path(of: record)))
        refusal("not a resume record")
        // Directories.
        try store.prepare()
        let file = directory + "/plain-file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        for path in [file, file + "/below", ""] {
            let error = #expect(throws: S3Error.self) { try S3StateStore(directory: path).prepare() }
            #expect(
                error?.code == .stateDirectory && error?.message.hasPrefix("cannot use the resume state directory") == true,
                "\(String(describing: error))")
        }
    }
}
