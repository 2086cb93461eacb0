import Dispatch
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The output stream's first `hasSpaceAvailable` reaches a writer whatever it does first:
/// open, then schedule (legal with Apple's streams), or schedule, then open; on a run loop or
/// on a dispatch queue.
@Suite(.hangGuard) struct BoundStreamEventTargetTests {
    enum Target: String, CaseIterable, Sendable {
        case runLoop, queue
    }

    @Test(arguments: Target.allCases, [true, false])
    func firstSpaceEventArrives(on target: Target, openFirst: Bool) async {
        let recorder = EventRecorder()
        let pair = BoundStreamPair(capacity: 37)
        pair.outputStream.delegate = recorder
        // Each event: write 20 bytes, so a second event comes once the reader drains them.
        recorder.onSpace = { output in
            let bytes = [UInt8](repeating: 7, count: 20)
            _ = bytes.withUnsafeBufferPointer { output.write($0.baseAddress!, maxLength: 20) }
        }
        let stop = Lock(false)
        switch target {
        case .queue:
            if openFirst { pair.outputStream.open() }
            pair.deliverOutputEvents(on: DispatchQueue(label: "events"))
            if !openFirst { pair.outputStream.open() }
        case .runLoop:
            let ready = DispatchSemaphore(value: 0)
            let thread = Thread {
                if openFirst { pair.outputStream.open() }
                pair.outputStream.schedule(in: .current, forMode: .default)
                if !openFirst { pair.outputStream.open() }
                ready.signal()
                while !stop.withLock({ $0 }) {
                    _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
                }
            }
            thread.start()
            await onThread { ready.wait() }
        }
        #expect(await onThread { recorder.wait(for: .hasSpaceAvailable) }, "no space event (\(target), open first: \(openFirst))")
        // The writer wrote 20 bytes on it; reading them makes room for the next event.
        pair.inputStream.open()
        var buffer = [UInt8](repeating: 0, count: 37)
        let read = buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: 37) }
        #expect(read == 20)
        let second = await onThread { () -> Bool in
            let deadline = Date().addingTimeInterval(patienceSeconds)
            while Date() < deadline {
                if recorder.events.withLock({ $0.filter { $0 == .hasSpaceAvailable }.count }) >= 2 { return true }
                _ = recorder.signal.wait(timeout: .now() + 0.1)
            }
            return false
        }
        #expect(second, "no second space event after the reader drained the ring")
        stop.withLock { $0 = true }
        pair.outputStream.close()
    }
}
