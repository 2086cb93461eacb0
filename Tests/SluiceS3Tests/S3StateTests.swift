import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The resume state: fingerprints and the durable, atomic record store.
struct S3StateTests {
    @Test func fingerprintSeesSizeInodeAndTimes() throws {
        let directory = try s3TemporaryDirectory("s3-fingerprint")
        let path = directory + "/f"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
        let first = try S3SourceFingerprint(path: path)
        #expect(first.size == 5 && first.inode != nil && first.modificationTime != nil)
        #expect(try S3SourceFingerprint(path: path).difference(from: first) == nil)
        // Same size, rewritten in place: the times change.
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(try S3SourceFingerprint(path: path).difference(from: first)?.contains("modification") == true)
        // Replaced by another file of the same size: another inode.
        let moved = try S3SourceFingerprint(path: path)
        try Data("hellO".utf8).write(to: URL(fileURLWithPath: directory + "/g"))
        #expect(rename(directory + "/g", path) == 0)
        let replaced = try S3SourceFingerprint(path: path)
        #expect(replaced.difference(from: moved) != nil)
        try Data("longer".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try S3SourceFingerprint(path: path).difference(from: first)?.contains("size") == true)
        #expect(throws: S3Error.self) { try S3SourceFingerprint(path: directory + "/missing") }
    }

    @Test func storeSavesLoadsListsAndRemoves() throws {
        let directory = try s3TemporaryDirectory("s3-state") + "/nested"
        let store = S3StateStore(directory: directory)
        let record = S3UploadRecord(
            endpoint: "http://127.0.0.1:1", bucket: "b", key: "k ü", uploadID: "U1", source: "file:/x",
            fingerprint: S3SourceFingerprint(size: 20 << 20, device: 1, inode: 2, modificationTime: 3, changeTime: 4),
            plan: try S3PartPlan(length: 20 << 20, partSize: 5 << 20), checksum: .crc32c, createdAt: 1)
        #expect(try store.load(endpoint: record.endpoint, bucket: "b", key: "k ü", source: "file:/x") == nil)
        try store.save(record)
        #expect(try store.load(endpoint: record.endpoint, bucket: "b", key: "k ü", source: "file:/x") == record)
        #expect(try store.load(endpoint: record.endpoint, bucket: "b", key: "k ü", source: "file:/y") == nil)
        var second = record
        second.source = "file:/y"
        second.uploadID = "U2"
        try store.save(second)
        #expect(Set(store.records(endpoint: record.endpoint, bucket: "b", key: "k ü").map(\.uploadID)) == ["U1", "U2"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { $0.hasSuffix(".json") })
        // Overwrite keeps one file.
        var updated = record
        updated.createdAt = 2
        try store.save(updated)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 2)
        store.remove(record)
        #expect(try store.load(endpoint: record.endpoint, bucket: "b", key: "k ü", source: "file:/x") == nil)
        // A torn or foreign file is an error that names the way out, not a silent new upload.
        try Data("{".utf8).write(to: URL(fileURLWithPath: store.path(of: second)))
        #expect(throws: S3Error.self) { try store.load(endpoint: record.endpoint, bucket: "b", key: "k ü", source: "file:/y") }
    }

    /// A job's listing of the records answers `hasRecord` as the disk did when it was taken:
    /// a missing directory holds none, a record saved before the listing is found (and only
    /// its own object and source), and a directory that cannot be listed sends each question
    /// to the disk.
    @Test func aListingOfTheRecordsAnswersAsTheDiskDid() throws {
        let directory = try s3TemporaryDirectory("s3-listing") + "/nested"
        let store = S3StateStore(directory: directory)
        let empty = S3StateStore.Listing()
        #expect(empty.names(of: directory) == [])
        #expect(!store.hasRecord(endpoint: "e", bucket: "b", key: "k", source: "file:/x", listing: empty))
        let record = S3UploadRecord(
            endpoint: "e", bucket: "b", key: "k", uploadID: "U1", source: "file:/x",
            fingerprint: S3SourceFingerprint(size: 20 << 20, device: 1, inode: 2, modificationTime: 3, changeTime: 4),
            plan: try S3PartPlan(length: 20 << 20, partSize: 5 << 20), checksum: nil, createdAt: 1)
        try store.save(record)
        let listing = S3StateStore.Listing()
        #expect(store.hasRecord(endpoint: "e", bucket: "b", key: "k", source: "file:/x", listing: listing))
        #expect(!store.hasRecord(endpoint: "e", bucket: "b", key: "k", source: "file:/y", listing: listing))
        #expect(!store.hasRecord(endpoint: "e", bucket: "b", key: "k2", source: "file:/x", listing: listing))
        // Another directory's store is not answered from it.
        #expect(listing.names(of: directory + "2") == nil)
        #expect(chmod(directory, 0) == 0)
        defer { chmod(directory, 0o700) }
        let unreadable = S3StateStore.Listing()
        #expect(getuid() == 0 || unreadable.names(of: directory) == nil)
    }

    /// A second run of the same upload while one holds its record is refused before any request
    /// (the endpoint here answers nothing), naming the holder's pid.
    @Test func aSecondRunOfTheSameUploadIsRefusedAtOnce() async throws {
        var options = S3Options()
        options.partSize = 5 << 20
        options.stateDirectory = try s3TemporaryDirectory("s3-lock")
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
            endpoint: URL(string: "http://127.0.0.1:1")!)
        let client = S3Client(configuration: configuration, options: options, transport: .curl)
        let source = S3Source.synthetic(length: 6 << 20, seed: 1)
        let location = try S3Location(bucket: "bucket", key: "k")
        let store = S3StateStore(directory: options.stateDirectory)
        let thrown = try await throwing(whileHolding: [configuration.endpointIdentity, "bucket", "k", source.identity], in: store) {
            _ = try await client.upload(source, to: location)
        }
        let error = try #require(thrown as? S3Error, "a second run went on, or failed otherwise: \(String(describing: thrown))")
        #expect(error.code == .inUse, "\(error)")
        #expect(error.message.contains("sluice pid \(getpid())"), "\(error)")
    }
}
