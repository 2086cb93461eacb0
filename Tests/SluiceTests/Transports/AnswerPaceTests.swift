import Foundation
import Testing
@testable import Sluice

/// `AnswerPace`: an answer comes at a useful rate and within a bound derived from the stall
/// timeout (issue 29, defect 1), on a clock of the test's own; then both transports against a
/// server that trickles its answer at 5 bytes a second (before: every command stayed for days).
@Suite("An answer's pace", .serialized, .hangGuard)
struct AnswerPaceTests {
    let start = ContinuousClock.now

    @Test("a trickle fails after one stall timeout; a paced answer goes on; nothing is judged before the answer begins")
    func paceOverEachStallTimeout() {
        var pace = AnswerPace(stallTimeout: .seconds(10))
        #expect(pace.check(at: start + .seconds(1_000)) == nil, "the body is still being sent")
        pace.begin(at: start)
        for second in 1...9 {
            pace.received(5)
            #expect(pace.check(at: start + .seconds(second)) == nil)
        }
        pace.received(5)
        #expect(pace.check(at: start + .seconds(10)) == .tooSlow(bytes: 50, window: .seconds(10)))

        var paced = AnswerPace(stallTimeout: .seconds(10))
        paced.begin(at: start)
        paced.received(10 * 1_024)
        #expect(paced.check(at: start + .seconds(10)) == nil, "1 KiB/s over the window keeps the pace")
        paced.received(10 * 1_024 - 1)
        #expect(
            paced.check(at: start + .seconds(20)) == .tooSlow(bytes: 10 * 1_024 - 1, window: .seconds(10)),
            "each window is judged on its own bytes")

        var silent = AnswerPace(stallTimeout: .seconds(10))
        silent.begin(at: start)
        #expect(silent.check(at: start + .seconds(30)) == nil, "silence is the stall timeout's to end, and name")
    }

    @Test("a paced answer still ends within 4 stall timeouts of its beginning")
    func wholeAnswerBound() {
        var pace = AnswerPace(stallTimeout: .seconds(10))
        pace.begin(at: start)
        pace.begin(at: start + .seconds(5))  // a second beginning changes nothing
        for window in 1...3 {
            pace.received(1 << 20)
            #expect(pace.check(at: start + .seconds(10 * window)) == nil)
        }
        pace.received(1 << 20)
        #expect(pace.check(at: start + .seconds(40)) == .tooLong(limit: .seconds(40)))
        #expect(
            AnswerPace.Violation.tooLong(limit: .seconds(40)).describe(host: "h:1")
                == "timed out: the answer from h:1 took longer than 40 s (4 x the stall timeout)")
    }

    @Test("a server trickling its answer at 5 B/s: the request fails with .timedOut naming the pace", arguments: TransportKind.allCases)
    func trickledAnswerFails(_ kind: TransportKind) async throws {
        let server = try CurlSink(script: "fault_server.py", arguments: ["--port", "0"])
        defer { server.stop() }
        var options = UploadOptions()
        options.stallTimeout = .seconds(1)
        let request = try UploadRequest(url: server.url("/trickle?bytes=1048576&rate=5"), method: "PUT")
        let error = await #expect(throws: UploadError.self) {
            try await kind.makeTransport().send(request, body: .bytes(SyntheticByteSource(length: 1_000, seed: 2)), options: options) { _ in }
        }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(error?.message.contains("the answer from 127.0.0.1:\(server.port) came too slowly") == true, "\(String(describing: error))")
    }
}
