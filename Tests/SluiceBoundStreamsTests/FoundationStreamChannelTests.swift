import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The Apple-platform path, run here: `InputStreamSource` over whatever
/// `Stream.getBoundStreams` returns, through the public `Stream` API only (on Linux that is
/// Sluice's pair, driven the way Foundation's would be: run-loop events, writes only while
/// there is space, partial writes kept in the staging buffer).
@Suite(.hangGuard) struct FoundationStreamChannelTests {
    static func source(_ bytes: any ByteSource, bufferSize: Int, from start: Int64 = 0) -> InputStreamSource {
        InputStreamSource(filler: .random(bytes, range: start..<bytes.length), bufferSize: bufferSize, queue: nil, streams: .foundation)
    }

    @Test(arguments: [(37, 71, 13), (64 * 1024, 1_000_003, 65524), (4096, 0, 100), (1, 257, 3), (1000, 999, 1000), (1000, 100_000, 7)])
    func deliversTheSourceByteForByte(bufferSize: Int, length: Int, readChunk: Int) async throws {
        let bytes = SyntheticByteSource(length: Int64(length), seed: 5)
        let iss = Self.source(ShortReadSource(base: bytes, chunk: 71), bufferSize: bufferSize)
        iss.start()
        let result = await onThread { drain(iss.inputStream, chunk: readChunk) }
        #expect(result.error == nil)
        #expect(result.bytes == (try bytes.bytes(in: 0..<bytes.length)))
        #expect(try await iss.result.get() == Int64(length))
        #expect(iss.bytesRead == Int64(length))
    }

    /// A failing source must not close the output (that would end a short body): the reader
    /// gets an error (Sluice's pair, on Linux) or is still waiting when the test closes it
    /// (Foundation's, which cannot fail its reader); never a clean end.
    @Test(arguments: [FaultySource.Fault.fail, .endEarly])
    func aFailingSourceNeverEndsTheBody(fault: FaultySource.Fault) async throws {
        let faultOffset: Int64 = 150_001
        let faulty = FaultySource(base: SyntheticByteSource(length: 400_000), faultOffset: faultOffset, fault: fault)
        let iss = Self.source(faulty, bufferSize: 4096)
        let closedByTest = Atomic<Bool>(false)
        iss.start()
        async let drained = onThread { () -> (count: Int, sawEndFirst: Bool) in
            let result = drain(iss.inputStream, chunk: 65524)
            return (result.bytes.count, result.error == nil && !closedByTest.load(ordering: .acquiring))
        }
        let outcome = await iss.result
        guard case .failure(let error) = outcome else {
            Issue.record("a failed source finished successfully")
            return
        }
        #expect((error as? InputStreamSource.SourceFailure)?.offset == faultOffset)
        closedByTest.store(true, ordering: .releasing)
        iss.inputStream.close()
        let (count, sawEndFirst) = await drained
        #expect(!sawEndFirst, "the reader saw the end of a short body")
        #expect(Int64(count) <= faultOffset)
    }

    /// The seed's program on Apple platforms, end to end: URLSession reads Foundation's pair.
    /// Less through the small buffers: each read holds FoundationNetworking's one shared queue.
    @Test(arguments: zip([65536, 4096, 1000], [Int64(16 << 20), 8 << 20, 4 << 20]))
    func uploadsThroughURLSessionByteExact(bufferSize: Int, length: Int64) async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        let body = SyntheticByteSource(length: length, seed: UInt64(bufferSize))
        var options = UploadOptions()
        options.bufferSize = max(1024, bufferSize)
        let uploader = Uploader(transport: URLSessionTransport(streams: .foundation), options: options)
        let response = try await uploader.upload(try UploadRequest(url: "\(receiver.url)/put/f.bin", method: "PUT"), body: .bytes(body))
        #expect(response.status == 200)
        let upload = try #require(receiver.completed.last)
        #expect(upload.bytes == body.length)
        #expect(upload.sha256 == (try Digest.sha256(of: body)))
        #expect(response.bytesSent == body.length)
    }

    /// A source that fails mid-body over Foundation's pair ends the task: an error naming the
    /// source, and the receiver never answers 200.
    @Test func aFailingSourceFailsTheUploadNotTheServer() async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        let faulty = FaultySource(base: SyntheticByteSource(length: 4 << 20), faultOffset: 1_000_003, fault: .fail)
        let uploader = Uploader(transport: URLSessionTransport(streams: .foundation))
        let error = await #expect(throws: UploadError.self) {
            try await uploader.upload(try UploadRequest(url: "\(receiver.url)/put/f.bin", method: "PUT"), body: .bytes(faulty))
        }
        #expect(error?.code == .sourceFailed, "\(String(describing: error))")
        #expect(error?.offset == 1_000_003)
        #expect(receiver.completed.isEmpty)
    }

    /// Runs `channelLeakChild` alone in a child process and expects it to pass.
    @Test(.enabled(if: !Isolated.inChild)) func leavesNoThreadBehind() async throws {
        let (status, output) = try await Isolated.run("channelLeakChild")
        #expect(status == 0, "the isolated leak check failed:\n\(output)")
        #expect(output.contains("channelLeakChild") && !output.contains("skipped"), "the isolated test did not run:\n\(output)")
    }

    /// Each source runs its stream events on a run-loop thread of its own: 300 sources,
    /// drained or cancelled, leave none of those threads and no descriptor behind.
    @Test(.enabled(if: Isolated.isChild("channelLeakChild"))) func channelLeakChild() async throws {
        func churn(_ count: Int) async {
            for index in 0..<count {
                let iss = Self.source(SyntheticByteSource(length: 50_000), bufferSize: 4096)
                iss.start()
                if index.isMultiple(of: 2) {
                    _ = await onThread { drain(iss.inputStream) }
                } else {
                    iss.cancel()
                    iss.inputStream.close()
                }
                _ = await iss.result
            }
        }
        await churn(6)  // warm-up: the dispatch pool's own descriptors and threads
        let fdsBefore = openFileDescriptorCount()
        let threadsBefore = threadCount()
        await churn(300)
        // A run-loop thread holds a few descriptors (its wake-up and timer fds) until it ends:
        // a leaked thread shows here too. Warm-up threads still ending may make it fewer.
        let settled = await onThread { () -> (threads: Int, fds: Int) in
            let deadline = DispatchTime.afterPatience
            var counts = (threads: threadCount(), fds: openFileDescriptorCount())  // tested as returned
            while (counts.threads - threadsBefore > 8 || counts.fds > fdsBefore) && DispatchTime.now() < deadline {
                usleep(100_000)
                counts = (threadCount(), openFileDescriptorCount())
            }
            return counts
        }
        #expect(settled.fds <= fdsBefore, "descriptors \(fdsBefore) -> \(settled.fds)")
        #expect(settled.threads - threadsBefore <= 8, "threads \(threadsBefore) -> \(settled.threads)")
    }
}
