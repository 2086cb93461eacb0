import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `RateLimit`: simulated senders on a simulated clock. Over every 10 s window the bytes stay
/// within 5 % of the cap (the job's promise), the cap is used (not left idle), and many senders
/// share one cap.
struct RateLimitTests {
    /// Runs `senders` greedy senders (each asks for `chunk` bytes whenever it may) against one
    /// bucket for `seconds` of simulated time; every grant, in time order.
    func simulate(rate: Int64, senders: Int, chunk: Int, seconds: Int64) throws -> (grants: [(at: Duration, bytes: Int, sender: Int)], limit: RateLimit) {
        let start = ContinuousClock.now
        let limit = try RateLimit(bytesPerSecond: rate, now: start)
        var next = [Duration](repeating: .zero, count: senders)
        var grants: [(at: Duration, bytes: Int, sender: Int)] = []
        var random = SeededGenerator(seed: UInt64(rate) &* 31 &+ UInt64(senders))
        let end = Duration.seconds(seconds)
        while true {
            let sender = next.indices.min { next[$0] < next[$1] }!
            let at = next[sender]
            if at >= end { break }
            switch limit.take(upTo: chunk, now: start + at) {
            case .send(let bytes):
                #expect(bytes >= 1 && bytes <= chunk)
                grants.append((at, bytes, sender))
                // Handing the bytes to the connection takes a while (2 GB/s and 2 µs a call).
                next[sender] = at + .nanoseconds(2_000 + bytes / 2)
            case .wait(let delay):
                #expect(delay > .zero)
                // Timers fire a little late, by up to 1 ms.
                next[sender] = at + delay + .microseconds(Int64(random.next() % 1_000))
            }
        }
        return (grants, limit)
    }

    /// The most bytes granted in any window of `window` (sliding over every grant).
    func busiestWindow(_ grants: [(at: Duration, bytes: Int, sender: Int)], _ window: Duration) -> Int64 {
        var most: Int64 = 0
        var sum: Int64 = 0
        var first = 0
        for grant in grants {
            sum += Int64(grant.bytes)
            while grants[first].at <= grant.at - window {
                sum -= Int64(grants[first].bytes)
                first += 1
            }
            most = max(most, sum)
        }
        return most
    }

    @Test(arguments: [
        (Int64(10 << 20), 1, 64 << 10), (Int64(10 << 20), 16, 64 << 10), (Int64(500 << 10), 8, 16 << 10),
        (Int64(1_000), 4, 64 << 10), (Int64(37), 3, 1_000), (Int64(1 << 30), 16, 1 << 20),
    ])
    func holdsTheCapOverEveryTenSeconds(rate: Int64, senders: Int, chunk: Int) throws {
        let (grants, limit) = try simulate(rate: rate, senders: senders, chunk: chunk, seconds: 30)
        let cap = 10 * Double(rate)
        let busiest = Double(busiestWindow(grants, .seconds(10)))
        #expect(busiest <= cap * 1.05, "busiest 10 s: \(busiest) bytes, cap \(cap)")
        let total = Double(grants.reduce(0) { $0 + Int64($1.bytes) })
        #expect(total >= 30 * Double(rate) * 0.97, "30 s carried \(total) bytes at \(rate) B/s")
        #expect(total <= 30 * Double(rate) + Double(limit.burst))
        // Every sender gets a share: none is starved by the others.
        if senders > 1 {
            for sender in 0..<senders {
                let share = Double(grants.filter { $0.sender == sender }.reduce(0) { $0 + $1.bytes })
                #expect(share >= total / Double(senders) / 4, "sender \(sender) got \(share) of \(total)")
            }
        }
    }

    @Test func refusesAbsurdCaps() {
        for rate: Int64 in [0, -1, .min, RateLimit.maximumBytesPerSecond + 1, .max] {
            #expect(throws: UploadError.self) { try RateLimit(bytesPerSecond: rate) }
        }
        #expect(throws: Never.self) { try RateLimit(bytesPerSecond: 1) }
        #expect(throws: Never.self) { try RateLimit(bytesPerSecond: RateLimit.maximumBytesPerSecond) }
    }

    /// A slow cap wakes senders for a hundredth of a second's bytes, not for one byte at a time.
    @Test func aSlowCapGrantsInSensibleSteps() throws {
        let (grants, _) = try simulate(rate: 1_000, senders: 1, chunk: 64 << 10, seconds: 10)
        #expect(grants.count <= 1_100, "\(grants.count) grants for 10 s at 1,000 B/s")
        #expect(grants.dropFirst().allSatisfy { $0.bytes >= 10 })
    }

    /// Tasks drawing at once on the real clock: never more than the burst plus the rate.
    @Test func tasksShareOneBucket() async throws {
        let limit = try RateLimit(bytesPerSecond: 4 << 20)
        let started = ContinuousClock.now
        let taken = await withTaskGroup(of: Int64.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine: Int64 = 0
                    while mine < 256 << 10 {
                        switch limit.take(upTo: 64 << 10) {
                        case .send(let bytes): mine += Int64(bytes)
                        case .wait(let delay): try? await Task.sleep(for: delay)
                        }
                    }
                    return mine
                }
            }
            return await group.reduce(0, +)
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        #expect(taken >= 8 * (256 << 10))
        #expect(
            Double(taken) <= Double(limit.burst) + seconds * Double(limit.bytesPerSecond) + Double(limit.maximumGrant),
            "\(taken) bytes in \(seconds) s")
    }
}
