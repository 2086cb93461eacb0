import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Sluice
import SluiceTestSupport

/// URLSession asks its delegate for a new body stream (`needNewBodyStream`) when libcurl
/// rewinds the body, from inside libcurl's seek callback on URLSession's work queue; on Linux
/// `cancel` waits for that very queue. A one-shot body must be refused there without waiting.
@Suite(.hangGuard)
struct URLSessionReplayTests {
    /// A task whose `cancel` waits until released, as URLSession's does for its work queue
    /// when it is called on that queue.
    final class WaitingCancelTask: URLSessionDataTask, @unchecked Sendable {
        // @unchecked: two semaphores, both thread-safe.
        let cancelled = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)

        override func cancel() {
            cancelled.signal()
            release.wait()
        }
    }

    @Test("a one-shot body asked for again: the delegate hands a failing stream and returns; the task is cancelled from elsewhere")
    func oneShotBodyAskedForAgainDoesNotWaitInTheCallback() async throws {
        let request = try UploadRequest(url: "http://127.0.0.1:9/replay", method: "PUT")
        let body = UploadBody.stream(length: .unknown) { InputStream(data: Data([1, 2, 3])) }
        let attempt = URLSessionAttempt(
            url: request.url, request: request, authorization: nil, body: body, options: UploadOptions(), streams: .platformDefault,
            responseBody: ResponseBodyReceiver(.collect(limit: 1024)), progress: { _ in })
        let session = URLSession(configuration: .ephemeral)
        let task = WaitingCancelTask()
        defer { task.release.signal() }
        let outcome = await onThread { () -> (returned: Bool, handed: Bool, fails: Bool) in
            let first = HandedStream()
            attempt.urlSession(session, task: task, needNewBodyStream: first.take)
            first.stream?.open()
            first.stream?.close()
            // Before: the second call cancelled the task itself and never returned.
            let second = HandedStream()
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                attempt.urlSession(session, task: task, needNewBodyStream: second.take)
                done.signal()
            }
            let returned = done.wait(timeout: .afterPatience) == .success
            guard let stream = second.stream else { return (returned, false, false) }
            stream.open()
            var byte: UInt8 = 0
            return (returned, true, stream.read(&byte, maxLength: 1) == -1)
        }
        #expect(outcome.returned, "needNewBodyStream waited for the task's cancel")
        #expect(outcome.handed, "a stream, never nil (nil would send an empty body)")
        #expect(outcome.fails, "the stream fails instead of sending something else")
        #expect(await onThread { task.cancelled.wait(timeout: .afterPatience) == .success }, "the task is still cancelled")
    }
}

/// What a `needNewBodyStream` completion handler was given.
// @unchecked Sendable: written by the handler before the caller reads it (ordered by the call's return or a semaphore).
final class HandedStream: @unchecked Sendable {
    private(set) var stream: InputStream?
    func take(_ stream: InputStream?) { self.stream = stream }
}
