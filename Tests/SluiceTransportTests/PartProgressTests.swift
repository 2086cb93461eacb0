#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Aggregate progress of a parallel upload: never lower than the report before, except in a
/// report that names the parts started again; in order even when parts on several loops
/// report at once.
@Suite("Parallel upload progress", .serialized, .hangGuard)
struct PartProgressTests {
    /// Reports in the order the callback saw them, and the times one went down unannounced.
    final class Recorder: Sendable {
        struct State {
            var reports: [ParallelProgress] = []
            var unannouncedDrops: [String] = []
        }
        let state = Lock(State())

        func record(_ progress: ParallelProgress) {
            state.withLock { state in
                if let last = state.reports.last, progress.bytesSent < last.bytesSent, progress.partsRestarted.isEmpty {
                    state.unannouncedDrops.append("\(last.bytesSent) -> \(progress.bytesSent)")
                }
                state.reports.append(progress)
            }
        }
    }

    @Test("4 threads updating 4 parts at once: every report is at least the one before, and the last is the total")
    func concurrentUpdatesReportInOrder() async {
        let parts = UploadPart.plan(length: 4 * 100_000, partSize: 100_000)
        let recorder = Recorder()
        let tracker = PartTracker(parts: parts) { recorder.record($0) }
        for (index, part) in parts.enumerated() { tracker.begin(index, part) }
        await withTaskGroup(of: Void.self) { group in
            for index in parts.indices {
                group.addTask {
                    await onThread {
                        for sent in stride(from: Int64(1), through: 100_000, by: 7) { tracker.update(index, sent) }
                        tracker.update(index, 100_000)
                        tracker.done(index)
                    }
                }
            }
        }
        tracker.finish()
        let state = recorder.state.withLock { $0 }
        #expect(state.unannouncedDrops.isEmpty, "progress went down: \(state.unannouncedDrops.prefix(5))")
        #expect(state.reports.last?.bytesSent == 400_000)
        #expect(state.reports.last?.partsDone == 4)
    }

    @Test("a part retried from its start: the one report where the total goes down names it, and no other goes down")
    func retriedPartIsAnnounced() async throws {
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let source = SyntheticByteSource(length: 12 << 20, seed: 31)
        let base = peer.url("")
        var upload = ParallelUpload(source: source, partSize: 2 << 20) { part in
            try UploadRequest(url: base + (part.number % 2 == 0 ? "/reset/\(part.number)" : "/part/\(part.number)"), method: "PUT")
        }
        upload.concurrency = 4
        upload.retryDelay = .zero
        let recorder = Recorder()
        let results = try await TransferEngine.shared.send(upload) { recorder.record($0) }
        #expect(results.filter { $0.attempts == 2 }.map(\.part.number) == [2, 4, 6])
        let state = recorder.state.withLock { $0 }
        #expect(state.unannouncedDrops.isEmpty, "progress went down without naming a retried part: \(state.unannouncedDrops.prefix(5))")
        let restarted = Set(state.reports.flatMap { $0.partsRestarted.map(\.number) })
        #expect(restarted == [2, 4, 6])
        #expect(state.reports.last?.bytesSent == source.length)
        #expect(state.reports.last?.retries == 3)
    }
}
#endif
