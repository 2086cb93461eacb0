import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

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

    @Test("a keep-alive answer: whitespace (after an XML declaration) is not judged for its pace, only for silence and its bound")
    func keepAliveAnswer() {
        var pace = AnswerPace(stallTimeout: .seconds(10), keepAlive: .seconds(600))
        pace.begin(at: start)
        let declaration = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n".utf8)
        declaration.withUnsafeBytes { pace.receivedBody($0, at: start) }
        for second in stride(from: 3, through: 300, by: 3) {
            [UInt8(ascii: " ")].withUnsafeBytes { pace.receivedBody($0, at: start + .seconds(second)) }
            #expect(pace.check(at: start + .seconds(second)) == nil, "a space every 3 s for 5 minutes")
            #expect(pace.checkSilence(sent: 100, at: start + .seconds(second)) == nil)
        }
        #expect(pace.checkSilence(sent: 100, at: start + .seconds(309)) == nil)
        #expect(pace.checkSilence(sent: 100, at: start + .seconds(310)) == .silent(window: .seconds(10)), "nothing for a stall timeout")
        // The document begins: from then on the rule of every answer, on its own clock.
        Array("<Complete".utf8).withUnsafeBytes { pace.receivedBody($0, at: start + .seconds(301)) }
        #expect(pace.check(at: start + .seconds(311)) == .tooSlow(bytes: 9, window: .seconds(10)))

        var waiting = AnswerPace(stallTimeout: .seconds(10), keepAlive: .seconds(600))
        waiting.begin(at: start)
        [UInt8(ascii: " ")].withUnsafeBytes { waiting.receivedBody($0, at: start + .seconds(599)) }
        #expect(waiting.check(at: start + .seconds(600)) == .noDocument(limit: .seconds(600)), "the wait for the document is bounded")

        var plain = AnswerPace(stallTimeout: .seconds(10))
        plain.begin(at: start)
        [UInt8(ascii: " ")].withUnsafeBytes { plain.receivedBody($0, at: start + .seconds(3)) }
        #expect(plain.check(at: start + .seconds(10)) == .tooSlow(bytes: 1, window: .seconds(10)), "without keepAlive a space is a trickle")
        #expect(plain.checkSilence(sent: 0, at: start + .seconds(100)) == nil, "silence is the transport's there")
    }

    /// S3's CompleteMultipartUpload answers 200 and then sends a space every few seconds for
    /// minutes before its XML: here one every 2 s against a stall timeout of 5 s (before: the
    /// pace rule ended it after 5 s on both transports; libcurl's own check, under 1 byte a
    /// second for the stall timeout, too).
    @Test("an answer kept alive by a space every 2 s completes; without keepAlive it is a trickle", arguments: TransportKind.allCases)
    func keptAliveAnswerCompletes(_ kind: TransportKind) async throws {
        let path = "/keep-alive-answer?spaces=4&every=2"
        let body = UploadBody.bytes(MemoryByteSource("<CompleteMultipartUpload/>"))
        let response = try await Self.send(kind, path, body: body, stallTimeout: .seconds(5), keepAlive: .seconds(60)).result.get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).hasSuffix("<ETag>\"kept-2\"</ETag></CompleteMultipartUploadResult>"))
        let plain = try await Self.send(kind, path, body: body, stallTimeout: .seconds(5)).result
        #expect((plain.error as? UploadError)?.code == .timedOut, "\(plain)")
    }

    @Test("a server trickling its answer at 5 B/s: the request fails with .timedOut naming the pace", arguments: TransportKind.allCases)
    func trickledAnswerFails(_ kind: TransportKind) async throws {
        let body = UploadBody.bytes(SyntheticByteSource(length: 1_000, seed: 2))
        let (result, port) = try await Self.send(kind, "/trickle?bytes=1048576&rate=5", body: body, stallTimeout: .seconds(1))
        let error = result.error as? UploadError
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(error?.message.contains("the answer from 127.0.0.1:\(port) came too slowly") == true, "\(String(describing: error))")
    }

    /// Sends `body` to a fault server of its own at `path` (PUT), its outcome and the server's port.
    static func send(
        _ kind: TransportKind, _ path: String, body: UploadBody, stallTimeout: Duration, keepAlive: Duration? = nil
    ) async throws -> (result: Result<UploadResponse, any Error>, port: Int) {
        let server = try CurlSink(script: "fault_server.py", arguments: ["--port", "0"])
        defer { server.stop() }
        var options = UploadOptions()
        options.stallTimeout = stallTimeout
        options.answerKeepAlive = keepAlive
        let request = try UploadRequest(url: server.url(path), method: "PUT")
        do {
            return (.success(try await kind.makeTransport().send(request, body: body, options: options) { _ in }), server.port)
        } catch {
            return (.failure(error), server.port)
        }
    }
}

extension Result {
    /// The failure, if any.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
