import Foundation
import Testing
import Sluice
import SluiceReceiver
@_spi(Floors) import SluicePrimitives

/// The package's root directory (this file is `Tests/SluiceTestSupport/TestSupport.swift`).
package let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// `Tests/Peers`: the Python peers the tests start.
package let peersDirectory = repositoryRoot.appendingPathComponent("Tests/Peers").path

/// A seeded generator so random tests can print and replay their seed.
package struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A seed for a random test: `SLUICE_TEST_SEED` when set, else fresh; printed either way.
package func testSeed(_ name: String) -> UInt64 {
    let seed = ProcessInfo.processInfo.environment["SLUICE_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    print("\(name): seed \(seed) (set SLUICE_TEST_SEED=\(seed) to replay)")
    return seed
}

/// A source that fails, or ends early, at a chosen offset.
package struct FaultySource: ByteSource {
    package init(base: SyntheticByteSource, faultOffset: Int64, fault: Fault) { self.base = base; self.faultOffset = faultOffset; self.fault = fault }
    package enum Fault: Sendable { case fail, endEarly }
    package let base: SyntheticByteSource
    package let faultOffset: Int64
    package let fault: Fault
    package var length: Int64 { base.length }

    package struct Injected: Error, Equatable { package init() {} }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        if offset >= faultOffset {
            if fault == .fail { throw Injected() }
            return 0
        }
        let room = Int(min(Int64(buffer.count), faultOffset - offset))
        return try base.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<room]), at: offset)
    }
}

/// A source whose reads return at most `chunk` bytes: forces short reads everywhere.
package struct ShortReadSource: ByteSource {
    package init(base: any ByteSource, chunk: Int) { self.base = base; self.chunk = chunk }
    package let base: any ByteSource
    package let chunk: Int
    package var length: Int64 { base.length }
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        let room = min(buffer.count, chunk)
        return try base.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<room]), at: offset)
    }
}

/// Open file descriptors of this process.
package func openFileDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The thread count once it is at most `slack` above `before`, or at the patience deadline: a
/// private serial queue may borrow a dispatch thread for a moment, a leaked one never goes back.
/// One reading is tested and returned (the pool moves between two).
package func settledThreadCount(within slack: Int, of before: Int) async -> Int {
    await onThread { () -> Int in
        let deadline = DispatchTime.afterPatience
        var count = threadCount()
        while count - before > slack && DispatchTime.now() < deadline {
            usleep(100_000)
            count = threadCount()
        }
        return count
    }
}

/// Threads of this process.
package func threadCount() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "") ?? -1
    }
    return -1
}

/// Reads an input stream to its end on the current thread.
package func drain(_ stream: InputStream, chunk: Int = 65524) -> (bytes: [UInt8], error: (any Error)?) {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: chunk)
    stream.open()
    while true {
        let count = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: chunk) }
        if count < 0 { return (out, stream.streamError) }
        if count == 0 { return (out, nil) }
        out.append(contentsOf: buffer[..<count])
    }
}

/// Runs blocking work on a thread of its own, so it never ties up Swift's cooperative
/// pool (which has one thread per core: two here).
package func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}

/// A test peer (a server or tool the tests start) misbehaved.
package struct PeerError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// The longest a test waits for something that must happen before it calls it a hang.
///
/// Not a speed bound: on a machine busy with other work (CI shares two cores) a step that takes
/// milliseconds alone was seen to wait over half a minute, behind FoundationNetworking's one
/// shared queue or a starved thread pool. Several such waits in a row stay under `.hangGuard`.
package let patience: Duration = .seconds(patienceSeconds)
/// `patience` in seconds.
package let patienceSeconds: Double = 90

extension DispatchTime {
    /// `patience` from now: the deadline of a wait for something that must happen.
    package static var afterPatience: DispatchTime { .now() + patienceSeconds }
}

/// The task's result, or nil if it has not finished within `seconds` (a bound, not a wait
/// for an event: a hang fails the test instead of hanging it); by default `patience`.
package func taskResult<T: Sendable>(
    of task: Task<T, any Error>, within seconds: Int = Int(patienceSeconds)
) async -> Result<T, any Error>? {
    let outcome = Lock<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result = await task.result
        outcome.withLock { $0 = result }
        done.signal()
    }
    _ = await onThread { done.wait(timeout: .now() + .seconds(seconds)) }
    return outcome.withLock { $0 }
}

extension Trait where Self == TimeLimitTrait {
    /// The one time limit a suite or test carries: a guard that turns a hang into a failure,
    /// not a speed bound. It is generous because CI shares two cores with other work; a
    /// suite moving a few hundred MiB through a debug build took over a minute at load 18, and
    /// one test of a few requests two and a half minutes at load 12 beside four builds.
    /// Speed targets live in Benchmarks/.
    package static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
