import Foundation
import Testing
@testable import Sluice
@testable import SluiceS3
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `UploadJob` to S3 in the library against the SeaweedFS scripts/test.sh starts: every object
/// byte-exact, one request budget for small files and parts alike, and a cancelled job that the
/// same job then finishes without sending again what it recorded.
///
/// Over both transports: on URLSession (Linux) each request and part (5 MiB here) goes with a
/// Content-Length, the body held in memory up to `URLSessionTransport.sizedBodyLimit`.
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct UploadJobSeaweedTests {
    let peer = SeaweedPeer.current!

    /// 24 small files in nested folders and one of 12 MiB (three 5 MiB parts).
    func makeTree() throws -> (root: String, files: [String: String]) {
        let root = try s3TemporaryDirectory("job-tree")
        var files: [String: String] = [:]
        var random = SeededGenerator(seed: 77)
        for index in 0..<24 {
            let relative = "\(["a", "a/b", "c d", "é"][index % 4])/f \(index) %+#"
            let bytes = (0..<(index * 311 + 1)).map { _ in UInt8.random(in: 0...255, using: &random) }
            try FileManager.default.createDirectory(
                atPath: root + "/" + (relative as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + relative))
            files[relative] = try Digest.sha256(of: MemoryByteSource(bytes))
        }
        let big = SyntheticByteSource(length: 12 << 20, seed: 5)
        var data = Data(count: 12 << 20)
        _ = try data.withUnsafeMutableBytes { try big.read(into: $0, at: 0) }
        try data.write(to: URL(fileURLWithPath: root + "/big.bin"))
        files["big.bin"] = try Digest.sha256(of: big)
        return (root, files)
    }

    func destination(_ transport: TransportKind, budget: RequestBudget, state: String) -> S3JobDestination {
        var options = S3Options()
        options.stateDirectory = state
        options.partSize = 5 << 20
        options.concurrency = budget.limit
        options.requestBudget = budget
        options.retryDelay = .milliseconds(10)
        let client = S3Client(configuration: peer.configuration, options: options, transport: transport)
        return S3JobDestination(client: client, location: try! S3Location(bucket: peer.bucket, key: "job-\(UUID().uuidString.prefix(8))"))
    }

    @Test(arguments: [TransportKind.curl, .urlsession])
    func everyFileArrivesWithinOneRequestBudget(transport: TransportKind) async throws {
        let (root, files) = try makeTree()
        let state = try s3TemporaryDirectory("job-state")
        let budget = RequestBudget(limit: 3)
        let destination = destination(transport, budget: budget, state: state)
        var job = UploadJob(root: root)
        job.concurrency = 3
        job.stateDirectory = state
        let reports = Lock<[UploadJobProgress]>([])
        let result = try await job.run(to: destination) { progress in reports.withLock { $0.append(progress) } }
        #expect(result.uploaded == files.count)
        #expect(result.failures.isEmpty, "\(result.failures)")
        #expect(result.recordKept == nil)
        #expect(try await peer.stored(under: destination.prefix) == files)
        // The budget was the bound and was used: three requests at once, never four.
        #expect(budget.mostInFlight == 3)
        let last = try #require(reports.withLock { $0.last })
        #expect(last.filesDone == files.count && last.walkEnded)
        #expect(last.bytesDone == last.bytesFound)
    }

    /// Cancelled once some files are recorded, the same job sends only the others.
    @Test func aCancelledJobIsFinishedByTheNextRun() async throws {
        let (root, files) = try makeTree()
        let state = try s3TemporaryDirectory("job-state")
        let destination = destination(.curl, budget: RequestBudget(limit: 2), state: state)
        var job = UploadJob(root: root)
        job.concurrency = 2
        job.stateDirectory = state
        let configured = job
        // Five files go to SeaweedFS; the next ones wait at a gate that only the cancel opens,
        // so the cancel always finds the job with five recorded and two held.
        let held = AsyncStream<Void>.makeStream()
        let holding = HoldingDestination(inner: destination, passing: 5, held: held.continuation)
        let enough = AsyncStream<Void>.makeStream()
        let task = Task {
            try await configured.run(to: holding) { progress in
                if progress.filesDone >= 5 { enough.continuation.yield() }
            }
        }
        var waiter = enough.stream.makeAsyncIterator()
        _ = await waiter.next()
        var heldWaiter = held.stream.makeAsyncIterator()
        for _ in 0..<2 { _ = await heldWaiter.next() }
        task.cancel()
        let first = await task.result
        guard case .failure(let error) = first else {
            Issue.record("the job ended as \(first), not cancelled")
            return
        }
        #expect(error is CancellationError, "\(error)")
        let recorded = try JobJournal(
            path: job.journalPath(root: DirectoryWalk.absolutePath(root), destination: destination),
            job: "\(DirectoryWalk.absolutePath(root)) -> \(destination.jobIdentity)"
        ).count
        #expect(recorded == 5)
        let second = try await job.run(to: destination)
        #expect(second.unchanged == recorded)
        #expect(second.uploaded == files.count - recorded)
        #expect(try await peer.stored(under: destination.prefix) == files)
    }

    /// A file whose multipart upload began (a record and an upload at the server) and then
    /// changed: the job aborts that upload and sends the file as it is now, where a single
    /// `s3 cp` refuses and asks for `--restart`. The record is read once for it. Also when the
    /// file shrank below the part size and goes as one `PutObject`: the stored upload is
    /// aborted first, not left billed (before: it and its record stayed).
    @Test(arguments: [12 << 20, 1 << 20])
    func aFileChangedSinceItsMultipartUploadBeganIsSentAgainAsItIsNow(newLength: Int) async throws {
        let root = try s3TemporaryDirectory("job-changed")
        let path = root + "/big.bin"
        func write(seed: UInt64, length: Int = 12 << 20) throws -> String {
            let source = SyntheticByteSource(length: Int64(length), seed: seed)
            var data = Data(count: length)
            _ = try data.withUnsafeMutableBytes { try source.read(into: $0, at: 0) }
            try data.write(to: URL(fileURLWithPath: path))
            return try Digest.sha256(of: source)
        }
        _ = try write(seed: 1)
        let state = try s3TemporaryDirectory("job-state")
        let destination = destination(.curl, budget: RequestBudget(limit: 1), state: state)
        let location = try S3Location(bucket: peer.bucket, key: destination.prefix + "big.bin")

        // A multipart upload begun and recorded, as a run killed part-way leaves it (made here
        // directly: no cancel to race with the upload).
        let client = destination.client
        let uploadID = try await client.createMultipartUpload(location, counters: S3Counters())
        let store = S3StateStore(directory: state)
        let recorded = S3UploadRecord(
            endpoint: client.configuration.endpointIdentity, bucket: location.bucket, key: location.key, uploadID: uploadID,
            source: "file:\(DirectoryWalk.absolutePath(root))/big.bin", fingerprint: try S3SourceFingerprint(path: path),
            plan: try S3PartPlan(length: 12 << 20, partSize: 5 << 20), checksum: client.options.checksum,
            createdAt: Date().timeIntervalSince1970)
        try store.save(recorded)

        // Changed since: other bytes, another modification time.
        let now = try write(seed: 2, length: newLength)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: path)
        var job = UploadJob(root: root)
        job.concurrency = 1
        job.stateDirectory = state
        let result = try await job.run(to: destination)
        #expect(result.uploaded == 1)
        #expect(result.failures.isEmpty, "\(result.failures)")
        #expect(try await peer.stored(under: destination.prefix) == ["big.bin": now])
        // The upload that began from the old bytes is gone, and so is its record.
        #expect(
            store.records(endpoint: client.configuration.endpointIdentity, bucket: location.bucket, key: location.key)
                .allSatisfy { $0.uploadID != recorded.uploadID })
        #expect(try await client.listMultipartUploads(location).allSatisfy { $0.uploadID != recorded.uploadID })
    }
}

extension UploadJobSeaweedTests {
    /// A job resumed with two of a file's three parts at the server: its numbers are true, the
    /// part this run sent as sent and the two as already there (before: all 12 MiB as sent).
    @Test func aResumedFileCountsOnlyWhatThisRunSent() async throws {
        let root = try s3TemporaryDirectory("job-resumed")
        let path = root + "/big.bin"
        let source = SyntheticByteSource(length: 12 << 20, seed: 9)
        var data = Data(count: 12 << 20)
        _ = try data.withUnsafeMutableBytes { try source.read(into: $0, at: 0) }
        try data.write(to: URL(fileURLWithPath: path))
        let state = try s3TemporaryDirectory("job-state")
        let destination = destination(.curl, budget: RequestBudget(limit: 1), state: state)
        let location = try S3Location(bucket: peer.bucket, key: destination.prefix + "big.bin")
        let client = destination.client
        let plan = try S3PartPlan(length: 12 << 20, partSize: 5 << 20)
        // Parts 1 and 2 at the server and the upload recorded, as a run killed after them leaves it.
        let uploadID = try await client.createMultipartUpload(location, counters: S3Counters())
        var record = S3UploadRecord(
            endpoint: client.configuration.endpointIdentity, bucket: location.bucket, key: location.key, uploadID: uploadID,
            source: "file:\(DirectoryWalk.absolutePath(root))/big.bin", fingerprint: try S3SourceFingerprint(path: path),
            plan: plan, checksum: client.options.checksum, createdAt: Date().timeIntervalSince1970)
        record.checksumType = client.options.effectiveChecksumType
        try S3StateStore(directory: state).save(record)
        _ = try await client.sendParts(
            [1, 2], of: try FileByteSource(path: path), plan: plan, to: location, uploadID: uploadID, counters: S3Counters(),
            meter: S3PartProgress(total: nil, interval: .seconds(1), report: nil))
        var job = UploadJob(root: root)
        job.concurrency = 1
        job.stateDirectory = state
        let result = try await job.run(to: destination)
        #expect(result.uploaded == 1 && result.failures.isEmpty, "\(result.failures)")
        #expect(result.bytesAlreadyThere == 10 << 20)
        #expect(result.bytesSent == 2 << 20)
        #expect(try await peer.stored(under: destination.prefix) == ["big.bin": try Digest.sha256(of: source)])
    }
}

/// Passes the first `passing` uploads to `inner`; the later ones wait, saying so on `held`,
/// until their task is cancelled.
struct HoldingDestination: UploadJobDestination {
    let inner: S3JobDestination
    let passing: Int
    let held: AsyncStream<Void>.Continuation
    let count = Lock(0)
    /// Never yields: a held upload waits on it until it is cancelled.
    let never = AsyncStream<Void>.makeStream()

    var jobIdentity: String { inner.jobIdentity }
    func name(for file: WalkedFile) throws -> String { try inner.name(for: file) }
    func upload(_ file: WalkedFile, as name: String, restart: Bool, progress: @escaping @Sendable (Int64) -> Void) async throws -> UploadJobSent {
        let number = count.withLock { count in
            count += 1
            return count
        }
        guard number > passing else { return try await inner.upload(file, as: name, restart: restart, progress: progress) }
        held.yield()
        for await _ in never.stream {}
        throw S3Error(.cancelled, "cancelled while held")
    }
}
