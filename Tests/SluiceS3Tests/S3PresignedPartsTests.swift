import Foundation
import Testing
@testable import Sluice
@testable import SluiceS3
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Presigned multipart uploads: the backend half (`S3Client`, with credentials) and the client
/// half (`S3PresignedPartsUpload`, with none) against the SeaweedFS scripts/test.sh starts,
/// objects read back by boto3. The CLI's three commands are Tests/e2e/test_s3_presigned_parts.py.
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct S3PresignedPartsSeaweedTests {
    let peer = SeaweedPeer.current!

    /// The backend: the only side with credentials.
    func backend() -> S3Client {
        var options = S3Options()
        options.partSize = 5 << 20
        return S3Client(configuration: peer.configuration, options: options)
    }

    func location() throws -> S3Location { try peer.location("presigned/") }

    /// The client's upload: `url` is the app's call to its backend.
    func clientUpload(
        _ upload: S3PresignedUpload, source: SyntheticByteSource, state: String,
        url: @escaping @Sendable (S3PresignedPartRequest) async throws -> S3PresignedURL
    ) throws -> S3PresignedPartsUpload {
        let identity = S3Source(source, identity: "synthetic:\(source.length)", fingerprint: S3SourceFingerprint(size: source.length))
        var client = try S3PresignedPartsUpload(
            uploadID: upload.uploadID, source: identity, partSize: upload.plan.partSize,
            checksum: upload.checksum, url: url)
        client.stateDirectory = state
        client.concurrency = 3
        client.retryPolicy.baseDelay = .milliseconds(10)
        return client
    }

    @Test(arguments: [TransportKind.curl, .urlsession])
    func theThreeStepsGiveTheObjectByteExactWithItsCompositeChecksum(transport: TransportKind) async throws {
        let backend = backend()
        let target = try location()
        let source = SyntheticByteSource(length: 17 << 20 + 5, seed: 31)
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        #expect(upload.plan.partCount == 4)
        #expect(upload.checksum == .crc32c)
        let asked = Lock<[Int: S3PresignedPartRequest]>([:])
        let client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-state")) { request in
            asked.withLock { $0[request.partNumber] = request }
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        let reports = Lock<[UploadProgress]>([])
        let result = try await client.run(over: transport.makeTransport()) { progress in reports.withLock { $0.append(progress) } }
        #expect(result.parts.map(\.partNumber) == [1, 2, 3, 4])
        let sent = reports.withLock { $0.map(\.bytesSent) }
        #expect(sent.last == source.length && sent == sent.sorted(), "progress rises to the whole source: \(sent)")
        #expect(result.partsSkipped == 0 && result.renewedURLs == 0)
        // Every part's checksum went to the backend, which signed it into the URL: S3 checked each part.
        let requests = asked.withLock { $0 }
        for number in 1...4 {
            let range = upload.plan.range(ofPart: number)
            let expected = try ChecksumHasher.checksum(.crc32c, of: SliceByteSource(source, range: range))
            #expect(requests[number]?.checksum == expected)
            #expect(requests[number]?.range == range)
            #expect(result.parts[number - 1].checksums[.crc32c] == expected.base64)
        }
        let url = try backend.presignPart(of: upload, number: 1, checksum: requests[1]?.checksum, expires: 60)
        #expect(url.headers.keys.map { $0.lowercased() } == ["x-amz-checksum-crc32c"])
        #expect(url.queryValue("X-Amz-SignedHeaders") == "host;x-amz-checksum-crc32c")

        let completed = try await backend.completePresignedUpload(upload, parts: result.parts)
        #expect(completed.partCount == 4)
        #expect(
            completed.checksum?.algorithm == .crc32c && completed.checksum?.type == .composite && completed.checksum?.partCount == 4
                && completed.checksum?.s3Value.hasSuffix("-4") == true,
            "the composite checksum was returned and checked: \(String(describing: completed.checksum))")
        let stored = try await peer.stored(key: target.key)
        #expect(stored.size == source.length)
        #expect(stored.sha256 == (try Digest.sha256(of: source)))
    }

    /// Opens when `count` callers have arrived; later callers pass at once.
    actor Barrier {
        let count: Int
        private var arrived = 0
        private var waiting: [CheckedContinuation<Void, Never>] = []
        init(_ count: Int) { self.count = count }

        func arrive() async {
            arrived += 1
            if arrived >= count { return open() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { waiting.append($0) }
            } onCancel: {
                Task { await self.open() }
            }
        }

        /// Lets everyone through (also when a waiter is cancelled: nothing waits for ever).
        func open() {
            arrived = max(arrived, count)
            for waiter in waiting { waiter.resume() }
            waiting = []
        }
    }

    struct BarrierTimedOut: Error {}

    @Test func partsGoInParallel() async throws {
        let backend = backend()
        let source = SyntheticByteSource(length: 21 << 20, seed: 36)
        let upload = try await backend.createPresignedUpload(try location(), length: source.length)
        // No URL is handed out before three parts asked for theirs: with parts sent one at a
        // time the barrier never opens, and the test fails after `patience` (checked at concurrency 1).
        let barrier = Barrier(3)
        var client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-parallel")) { request in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await barrier.arrive() }
                group.addTask {
                    try await Task.sleep(for: patience)
                    throw BarrierTimedOut()
                }
                try await group.next()
                group.cancelAll()
            }
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        client.concurrency = 3
        let result = try await client.run()
        #expect(result.parts.count == 5)
        _ = try await backend.completePresignedUpload(upload, parts: result.parts)
    }

    /// The app's half with its progress as an `AsyncSequence` (`runWithProgress`): the reports
    /// end at the source's length, and the parts complete byte-exact.
    @Test func progressAsAnAsyncSequence() async throws {
        let backend = backend()
        let source = SyntheticByteSource(length: (11 << 20) + 9, seed: 37)
        let target = try location()
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        var client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-progress")) { request in
            try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        client.transfer.progressInterval = .zero
        let (progress, run) = client.runWithProgress()
        var last: UploadProgress?
        for await report in progress { last = report }
        let result = try await run.value
        #expect(last?.bytesSent == source.length && last?.totalBytes == source.length)
        _ = try await backend.completePresignedUpload(upload, parts: result.parts)
        let stored = try await peer.stored(key: target.key)
        let sha256 = try Digest.sha256(of: source)
        #expect(stored.size == source.length && stored.sha256 == sha256)
    }

    @Test func aRunThatDiedResumesWithOnlyThePartsNotAccepted() async throws {
        let backend = backend()
        let target = try location()
        let source = SyntheticByteSource(length: 21 << 20 + 9, seed: 32)
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        let state = try s3TemporaryDirectory("presigned-resume")
        struct BackendDown: Error {}
        // The first run: the backend stops answering after two parts (the process "dies").
        let first = try clientUpload(upload, source: source, state: state) { request in
            guard request.partNumber <= 2 else { throw BackendDown() }
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        var dying = first
        dying.concurrency = 1
        await #expect(throws: S3Error.self) { try await dying.run() }

        let asked = Lock<[Int]>([])
        let second = try clientUpload(upload, source: source, state: state) { request in
            asked.withLock { $0.append(request.partNumber) }
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        let result = try await second.run()
        #expect(result.partsSkipped == 2)
        #expect(asked.withLock { $0.sorted() } == [3, 4, 5], "only the parts not accepted were sent again")
        #expect(result.bytesSent == source.length - 2 * (5 << 20))
        // Run once more: everything is recorded; nothing is sent, the same list comes back.
        let again = try await second.run()
        #expect(again.partsSkipped == 5 && again.bytesSent == 0)
        #expect(again.parts == result.parts)

        _ = try await backend.completePresignedUpload(upload, parts: result.parts)
        #expect(try await peer.stored(key: target.key).sha256 == (try Digest.sha256(of: source)))
        second.forgetState()
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".journal") }.isEmpty)
    }

    @Test func aURLThatExpiredIsAskedForAgainOnce() async throws {
        let backend = backend()
        let target = try location()
        let source = SyntheticByteSource(length: 6 << 20, seed: 33)
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        let renewals = Lock<[Int]>([])
        // The backend first hands out URLs that expired a minute ago, then good ones.
        let client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-expiry")) { request in
            if request.renewal { renewals.withLock { $0.append(request.partNumber) } }
            let signedAt = SigV4Timestamp(Date().addingTimeInterval(request.renewal ? 0 : -120))
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 60, at: signedAt)
        }
        let result = try await client.run()
        #expect(result.renewedURLs == 2)
        #expect(renewals.withLock { $0.sorted() } == [1, 2])
        _ = try await backend.completePresignedUpload(upload, parts: result.parts)
        #expect(try await peer.stored(key: target.key).size == source.length)

        // Expired by the server's clock only (this client's runs ten minutes behind): S3 answers
        // 403 AccessDenied "Request has expired", and the URL is asked for again.
        let serverSide = try await backend.createPresignedUpload(try location(), length: source.length)
        let asked = Lock<[Bool]>([])
        var late = try clientUpload(serverSide, source: source, state: try s3TemporaryDirectory("presigned-late")) { request in
            asked.withLock { $0.append(request.renewal) }
            let signedAt = SigV4Timestamp(Date().addingTimeInterval(request.renewal ? 0 : -120))
            return try backend.presignPart(of: serverSide, number: request.partNumber, checksum: request.checksum, expires: 60, at: signedAt)
        }
        late.concurrency = 1
        late.now = { Date().addingTimeInterval(-600) }
        let renewed = try await late.run()
        #expect(renewed.renewedURLs == 2 && renewed.retries == 0)
        #expect(asked.withLock { $0 } == [false, true, false, true])
        _ = try await backend.completePresignedUpload(serverSide, parts: renewed.parts)
        #expect(try await peer.stored(key: serverSide.location.key).sha256 == (try Digest.sha256(of: source)))

        // A backend that only has expired URLs: the part fails in one line, asked twice.
        let stale = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-stale")) { request in
            try backend.presignPart(
                of: upload, number: request.partNumber, checksum: request.checksum, expires: 60,
                at: SigV4Timestamp(Date().addingTimeInterval(-120)))
        }
        let error = await #expect(throws: S3Error.self) { try await stale.run() }
        #expect(error?.status == 403 && error?.serverCode == "AccessDenied")
        #expect(error?.message.contains("expired") == true, "\(String(describing: error))")
    }

    @Test func aPartWhoseBytesDifferFromTheSignedChecksumIsRefusedByS3() async throws {
        let backend = backend()
        let target = try location()
        let source = SyntheticByteSource(length: 6 << 20, seed: 35)
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        // The backend signs the checksum of other bytes: S3 compares it with what it receives.
        let client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-digest")) { request in
            let other = ChecksumHasher.checksum(.crc32c, of: Array(repeating: UInt8(0x61), count: 7))
            return try backend.presignPart(
                of: upload, number: request.partNumber, checksum: request.partNumber == 2 ? other : request.checksum,
                expires: 300)
        }
        let error = await #expect(throws: S3Error.self) { try await client.run() }
        #expect(error?.code == .server && error?.status == 400 && error?.partNumber == 2, "\(String(describing: error))")
        #expect(["BadDigest", "InvalidDigest"].contains(error?.serverCode ?? ""), "\(String(describing: error))")
        #expect(
            !(try await backend.listParts(target, uploadID: upload.uploadID, counters: S3Counters()).map(\.partNumber).contains(2)),
            "the part was not stored")
    }

    @Test func aFileWrittenToWhileItIsSentGivesNoList() async throws {
        let backend = backend()
        let directory = try s3TemporaryDirectory("presigned-changing")
        let path = directory + "/source.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x62, count: 11 << 20)))
        let file = try FileByteSource(path: path)
        defer { file.close() }
        let upload = try await backend.createPresignedUpload(try location(), length: file.length)
        let source = S3Source(file, identity: "file:\(path)", fingerprint: try S3SourceFingerprint(path: path))
        var client = try S3PresignedPartsUpload(uploadID: upload.uploadID, source: source, partSize: upload.plan.partSize) { request in
            // The gate: the file is written to when part 3's URL is asked for.
            if request.partNumber == 3, let handle = FileHandle(forWritingAtPath: path) {
                try handle.seek(toOffset: 100)
                try handle.write(contentsOf: Data("changed".utf8))
                try handle.close()
            }
            return try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        client.stateDirectory = directory + "/state"
        client.concurrency = 1
        let error = await #expect(throws: S3Error.self) { try await client.run() }
        #expect(error?.code == .sourceChanged, "\(String(describing: error))")
        #expect(
            error?.message.contains("the source changed while it was sent (its modification time changed)") == true,
            "\(String(describing: error))")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory + "/state").filter { $0.hasSuffix(".journal") }.isEmpty,
            "the parts of the changing file are not kept for a rerun")
    }

    @Test func completeRefusesAListThatIsNotThePlanAndCompletesNothing() async throws {
        let backend = backend()
        let target = try location()
        let source = SyntheticByteSource(length: 11 << 20, seed: 34)
        let upload = try await backend.createPresignedUpload(target, length: source.length)
        let client = try clientUpload(upload, source: source, state: try s3TemporaryDirectory("presigned-check")) { request in
            try backend.presignPart(of: upload, number: request.partNumber, checksum: request.checksum, expires: 300)
        }
        let parts = try await client.run().parts
        var wrongETag = parts
        wrongETag[1].eTag = "\"0123456789abcdef0123456789abcdef\""
        var noChecksum = parts
        noChecksum[2].checksums = [:]
        let cases: [([S3CompletedPart], String)] = [
            (Array(parts.dropLast()), "are numbered 1, 2; the plan has parts 1 ... 3"),
            (parts + [parts[0]], "are numbered 1, 1, 2, 3"),
            (wrongETag, "give part 2 the ETag"),
            (noChecksum, "lack the CRC32C checksum of part 3"),
        ]
        for (list, reason) in cases {
            let error = await #expect(throws: S3Error.self) { try await backend.completePresignedUpload(upload, parts: list) }
            #expect(error?.code == .verification)
            #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        }
        // A plan that says the upload is longer: part 3 at the server is shorter than it says.
        var longer = upload
        longer.plan = try S3PartPlan(length: 12 << 20, partSize: 5 << 20)
        let error = await #expect(throws: S3Error.self) { try await backend.completePresignedUpload(longer, parts: parts) }
        #expect(error?.message.contains("include part 3 of 1048576 bytes; the plan gives it 2097152") == true, "\(String(describing: error))")
        #expect(try await peer.stored(key: target.key).status == 404, "nothing was completed")
        _ = try await backend.completePresignedUpload(upload, parts: parts)
        #expect(try await peer.stored(key: target.key).sha256 == (try Digest.sha256(of: source)))
    }
}

/// The plan document and URL expiry, without a server.
@Suite struct S3PresignedPlanTests {
    func plan(size: Int64 = 12 << 20) throws -> S3PresignedPlan {
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
            endpoint: URL(string: "http://127.0.0.1:9000")!)
        var options = S3Options()
        options.partSize = 5 << 20
        let client = S3Client(configuration: configuration, options: options)
        let upload = S3PresignedUpload(
            location: try S3Location(bucket: "bkt", key: "dir/k é"), uploadID: "up-1",
            plan: try S3PartPlan(length: size, partSize: 5 << 20), checksum: .crc32c)
        return try client.presignedPlan(upload, expires: 600)
    }

    @Test func aPlanAsMadeValidatesAndRoundTripsThroughJSON() throws {
        let plan = try plan()
        #expect(plan.parts.map(\.length) == [5 << 20, 5 << 20, 2 << 20])
        let decoded = try JSONDecoder().decode(S3PresignedPlan.self, from: JSONEncoder().encode(plan))
        #expect(decoded == plan)
        try decoded.validate()
        #expect(String(decoding: try JSONEncoder().encode(plan), as: UTF8.self).contains("\"uploadId\":\"up-1\""))
    }

    @Test func editedPlansAreRefusedNamingWhatIsWrong() throws {
        let good = try plan()
        let edits: [(String, (inout S3PresignedPlan) throws -> Void)] = [
            ("has part 2 at bytes 5242881+5242880", { $0.parts[1].offset += 1 }),
            ("has part 3 at bytes 10485760+2097153", { $0.parts[2].length += 1 }),
            ("lists part 2 where part 1 belongs", { $0.parts.swapAt(0, 1) }),
            ("lists 2 parts; 12582912 bytes in parts of 5242880 are 3", { $0.parts.removeLast() }),
            (
                "has part 3 at bytes 10485760+2097152; the part size puts it at 10485760+2097153",
                { $0.upload.plan = try S3PartPlan(length: 12 << 20 + 1, partSize: 5 << 20) }
            ),
            (
                "a URL for part 2 that is not UploadPart of part 2",
                { $0.parts[1].url = good.parts[1].url.replacingOccurrences(of: "partNumber=2", with: "partNumber=3") }
            ),
            ("not UploadPart of part 1 of upload up-2", { $0.upload.uploadID = "up-2" }),
            (
                "has a URL for part 3 to 127.0.0.1:9000/bkt/dir/other é, part 1's goes to 127.0.0.1:9000/bkt/dir/k é",
                { $0.parts[2].url = good.parts[2].url.replacingOccurrences(of: "/bkt/dir/k", with: "/bkt/dir/other") }
            ),
            ("has a URL for part 1 to /bkt/dir/k é, not to this object", { $0.upload.location = try S3Location(bucket: "bkt", key: "dir/other") }),
            (
                "has a URL for part 2 to 127.0.0.1:9000/bkt/dir/k é, part 1's goes to 127.0.0.1:9001/bkt/dir/k é",
                { $0.parts[0].url = good.parts[0].url.replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:9001") }
            ),
            ("is format version 2", { $0.version = 2 }),
        ]
        for (reason, edit) in edits {
            var edited = good
            try edit(&edited)
            let error = #expect(throws: S3Error.self) { try edited.validate() }
            #expect(error?.code == .invalidOption)
            #expect(error?.message.contains(reason) == true, "\(reason): \(String(describing: error))")
        }
    }

    @Test func aPlanWhoseUploadS3WouldRefuseDoesNotDecode() throws {
        let text = String(decoding: try JSONEncoder().encode(try plan()), as: UTF8.self)
        for (from, to, code) in [
            ("\"partSize\":5242880", "\"partSize\":1048576", S3Error.Code.invalidOption),
            ("\"bucket\":\"bkt\"", "\"bucket\":\"b\"", .invalidLocation),
            ("\"size\":12582912", "\"size\":-1", .invalidOption),
        ] {
            #expect(text.contains(from))
            let error = #expect(throws: S3Error.self) {
                try JSONDecoder().decode(S3PresignedPlan.self, from: Data(text.replacingOccurrences(of: from, with: to).utf8))
            }
            #expect(error?.code == code, "\(to): \(String(describing: error))")
        }
    }

    @Test func aSourceOfAnotherLengthIsRefused() throws {
        let plan = try plan()
        for length: Int64 in [12 << 20 - 1, 12 << 20 + 1, 0] {
            let source = S3Source(SyntheticByteSource(length: length, seed: 1), identity: "s", fingerprint: S3SourceFingerprint(size: length))
            let error = #expect(throws: S3Error.self) { try plan.upload(source) }
            #expect(error?.code == .sourceChanged)
            #expect(error?.message == "the source has \(length) bytes; the plan for s3://bkt/dir/k é is for 12582912 bytes")
        }
    }

    @Test func aURLKnowsWhenItExpires() {
        let url = S3PresignedURL(url: "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-Signature=aa")
        #expect(url.expiresAt == Date(timeIntervalSince1970: 1_369_440_000))
        #expect(url.hasExpired(at: Date(timeIntervalSince1970: 1_369_440_000)))
        #expect(!url.hasExpired(at: Date(timeIntervalSince1970: 1_369_439_999)))
        #expect(S3PresignedURL(url: "http://h/k?uploadId=1").expiresAt == nil)
    }
}
