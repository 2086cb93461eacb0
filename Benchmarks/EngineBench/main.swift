// Benchmark driver for Sluice's transfer engine (Benchmarks/engine.sh). Prints one JSON line.
//
//   engine-bench concurrent URL COUNT SIZE [LOOPS]     COUNT synthetic uploads of SIZE at once
//   engine-bench parts FILE URL PART_SIZE N [LOOPS]    a parallel ranged upload of FILE
//   engine-bench cancel URL                            cancel latency of a parallel upload
import Foundation
import Sluice
import SluiceCLI

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("engine-bench: \(message)\n".utf8))
    exit(2)
}

func bytes(_ text: String) -> Int64 {
    guard let value = try? ByteCount.parse(text) else { fail("bad size \(text)") }
    return Int64(value)
}

/// Threads of this process, all and Sluice's own (named sluice-*).
func threads() -> (all: Int, sluice: Int) {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    let sluice = tasks.filter {
        ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "").hasPrefix("sluice-")
    }.count
    return (tasks.count, sluice)
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return elapsed / .seconds(1)
}

func engine(_ arguments: [String], _ index: Int) -> TransferEngine {
    guard arguments.count > index, let loops = Int(arguments[index]) else { return .shared }
    return TransferEngine(configuration: .init(loops: loops, maximumTransfersPerHost: 256))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: see the comment at the top of main.swift") }
switch arguments[1] {
case "concurrent":
    guard arguments.count >= 5, let count = Int(arguments[3]) else { fail("concurrent URL COUNT SIZE [LOOPS]") }
    let url = arguments[2]
    let size = bytes(arguments[4])
    let engine = engine(arguments, 5)
    let before = threads()
    let peak = ConditionBox((all: 0, sluice: 0))
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            group.addTask {
                let request = try UploadRequest(url: url, method: "PUT")
                let next = ConditionBox(Int64(0))
                let response = try await engine.send(request, body: .bytes(SyntheticByteSource(length: size, seed: UInt64(index)))) { sent in
                    if sent >= next.value {
                        next.update { _ in sent + (4 << 20) }
                        let now = threads()
                        peak.update { ($0.all < now.all ? now.all : $0.all, max($0.sluice, now.sluice)) }
                    }
                }
                guard response.isSuccess else { fail("status \(response.status)") }
            }
        }
        try await group.waitForAll()
    }
    let wall = seconds(since: start)
    let top = peak.value
    print("{\"mode\":\"concurrent\",\"count\":\(count),\"size\":\(size),\"wall\":\(wall),\"threads_before\":\(before.all),\"threads_peak\":\(top.all),\"sluice_threads_peak\":\(top.sluice),\"connections\":\(engine.statistics.connectionsOpened)}")
case "parts":
    guard arguments.count >= 6, let concurrency = Int(arguments[5]) else { fail("parts FILE URL PART_SIZE N [LOOPS]") }
    let source = try FileByteSource(path: arguments[2])
    let url = arguments[3]
    let engine = engine(arguments, 6)
    var upload = ParallelUpload(source: source, partSize: bytes(arguments[4])) { part in
        try UploadRequest(url: "\(url)?part=\(part.number)", method: "PUT")
    }
    upload.concurrency = concurrency
    let start = ContinuousClock.now
    let results = try await engine.send(upload)
    let wall = seconds(since: start)
    let retries = results.reduce(0) { $0 + $1.attempts - 1 }
    print("{\"mode\":\"parts\",\"parts\":\(results.count),\"wall\":\(wall),\"mb_per_s\":\(Double(source.length) / wall / 1e6),\"retries\":\(retries),\"loops\":\(engine.configuration.loops),\"connections\":\(engine.statistics.connectionsOpened)}")
case "cancel":
    let source = SyntheticByteSource(length: 8 << 30, seed: 1)
    let url = arguments[2]
    var upload = ParallelUpload(source: source, partSize: 64 << 20) { _ in try UploadRequest(url: url, method: "PUT") }
    upload.concurrency = 8
    let moving = DispatchSemaphore(value: 0)
    let task = Task {
        try await TransferEngine.shared.send(upload) { progress in
            if progress.bytesSent > 256 << 20 { moving.signal() }
        }
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread { moving.wait(); done.resume() }.start()
    }
    let start = ContinuousClock.now
    task.cancel()
    _ = await task.result
    print("{\"mode\":\"cancel\",\"ms\":\(seconds(since: start) * 1000)}")
default:
    fail("unknown mode \(arguments[1])")
}

/// A value behind a lock, for the samplers.
final class ConditionBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func update(_ change: (Value) -> Value) { lock.withLock { stored = change(stored) } }
}
