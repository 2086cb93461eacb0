import Testing

@testable import Sluice
@testable import SluiceS3
import SluiceTestSupport

/// `AWSChunkReadAheadState`, transition by transition: a table of (state, event) → (state,
/// action), the illegal and late events included (a take after the end, a claim by a producer
/// not running, a read of a claim a restart or a failure made stale, an end twice). A ring of 4
/// slots over a body of 10 chunks unless a row says otherwise.
struct AWSChunkReadAheadStateTests {
    typealias State = AWSChunkReadAheadState

    /// What a row compares of a state.
    struct Seen: Equatable, CustomStringConvertible {
        var produced: Int64
        var consumed: Int64
        var running: Bool
        var generation: Int
        var ended: Bool
        var wakeAt: Int64?
        var waker: Bool
        var owed: Int
        /// The chunks whose slots are ready.
        var ready: [Int64]
        /// The chunks whose slots are claimed and not read.
        var claimed: [Int64]

        init(_ state: State) {
            produced = state.produced
            consumed = state.consumed
            running = state.running
            generation = state.generation
            ended = state.ended
            wakeAt = state.wakeAt
            waker = state.waker != nil
            owed = state.whenStopped.count
            ready = state.slots.filter { $0.chunk >= 0 && $0.ready }.map(\.chunk).sorted()
            claimed = state.slots.filter { $0.chunk >= 0 && !$0.ready }.map(\.chunk).sorted()
        }

        var description: String {
            "produced \(produced) consumed \(consumed) running \(running) gen \(generation) ended \(ended) wakeAt \(wakeAt.map(String.init) ?? "nil") waker \(waker) owed \(owed) ready \(ready) claimed \(claimed)"
        }
    }

    /// An action in words (closures, errors and bytes compared by what they are).
    static func words(_ action: State.Action) -> String {
        switch action {
        case .none: return "none"
        case .launch: return "launch"
        case .chunk(_, let hash): return "chunk \(hash.first.map(String.init) ?? "?")"
        case .failed: return "failed"
        case .ended: return "ended"
        case .notReady: return "notReady"
        case .wait: return "wait"
        case .run(let closures): return "run \(closures.count)"
        case .read(let claim): return "read \(claim.first)+\(claim.count) gen \(claim.generation)"
        case .wake(let waker): return waker == nil ? "wake" : "wake waker"
        }
    }

    struct Failure: Error {}

    /// Chunks of `claim`, read: hash = [chunk]; `failing` chunks carry an error.
    static func slots(_ claim: State.Claim, failing: Set<Int64> = []) -> [State.Slot] {
        (0..<claim.count).map { offset in
            let chunk = claim.first + Int64(offset)
            return State.Slot(
                chunk: chunk, ready: true, hash: failing.contains(chunk) ? [] : [UInt8(chunk)],
                error: failing.contains(chunk) ? Failure() : nil)
        }
    }

    static let waker: @Sendable () -> Void = {}
    static let then: @Sendable () -> Void = {}

    /// Applies `events`, each checked to give what its row says.
    static func apply(_ state: inout State, _ events: [(State.Event, String)]) {
        for (event, expected) in events {
            let action = state.event(event)
            #expect(words(action) == expected, "\(event)")
        }
    }

    /// Steps that bring a fresh state somewhere, by name.
    enum Start: String, CaseIterable {
        case fresh
        /// take(0): launched.
        case launched
        /// Launched, then claimed 0 and 1.
        case claimed
        /// Claimed 0, 1 and read them: the producer claims on.
        case read01
        /// The consumer waits for 0 (with a waker), nothing read.
        case consumerWaiting
        /// Claimed 0 and 1, then ended while the producer reads.
        case endedWhileRunning
        /// Ended with no producer.
        case endedIdle
    }

    static func state(_ start: Start, chunks: Int64 = 10, slots: Int = 4) -> State {
        var state = State(slotCount: slots, dataChunkCount: chunks)
        switch start {
        case .fresh: break
        case .launched: _ = state.event(.take(0))
        case .claimed:
            _ = state.event(.take(0))
            _ = state.event(.claim)
        case .read01:
            _ = state.event(.take(0))
            _ = state.event(.claim)
            _ = state.event(.read(State.Claim(first: 0, count: 2, generation: 0), slots: slots01))
        case .consumerWaiting:
            _ = state.event(.take(0))
            _ = state.event(.look(0, waker: waker))
        case .endedWhileRunning:
            _ = state.event(.take(0))
            _ = state.event(.claim)
            _ = state.event(.end(then: then))
        case .endedIdle: _ = state.event(.end(then: then))
        }
        return state
    }

    static var slots01: [State.Slot] { slots(State.Claim(first: 0, count: 2, generation: 0)) }

    /// One row: from a start, an event, the action and the state after.
    struct Row: CustomTestStringConvertible, Sendable {
        var start: Start
        var event: @Sendable () -> State.Event
        var name: String
        var action: String
        var after: @Sendable (inout Seen) -> Void
        var testDescription: String { "\(start.rawValue) + \(name) -> \(action)" }
    }

    static let rows: [Row] = [
        // take
        Row(
            start: .fresh, event: { .take(0) }, name: "take 0", action: "launch",
            after: {
                $0.consumed = 0
                $0.running = true
            }),
        Row(
            start: .launched, event: { .take(1) }, name: "take 1 (producer running)", action: "none",
            after: {
                $0.consumed = 1
                $0.produced = 1
            }),
        Row(start: .read01, event: { .take(1) }, name: "take 1 (producer running, 1 read)", action: "none", after: { $0.consumed = 1 }),
        Row(
            start: .fresh, event: { .take(10) }, name: "take past the body", action: "none",
            after: {
                $0.consumed = 10
                $0.produced = 10
            }),
        Row(start: .endedIdle, event: { .take(0) }, name: "take after end (illegal: ignored)", action: "none", after: { _ in }),
        // look
        Row(start: .read01, event: { .look(0, waker: nil) }, name: "look 0, ready", action: "chunk 0", after: { _ in }),
        Row(start: .read01, event: { .look(1, waker: waker) }, name: "look 1 with a waker, ready", action: "chunk 1", after: { _ in }),
        Row(
            start: .claimed, event: { .look(0, waker: nil) }, name: "look 0 claimed not read, waiting", action: "wait",
            after: {
                $0.wakeAt = 1
            }),
        Row(
            start: .claimed, event: { .look(0, waker: waker) }, name: "look 0 claimed not read, with a waker", action: "notReady",
            after: {
                $0.wakeAt = 1
                $0.waker = true
            }),
        Row(start: .launched, event: { .look(5, waker: nil) }, name: "look a chunk never claimed", action: "wait", after: { $0.wakeAt = 3 }),
        Row(start: .endedIdle, event: { .look(0, waker: nil) }, name: "look after end", action: "ended", after: { _ in }),
        // end
        Row(start: .fresh, event: { .end(then: then) }, name: "end, no producer", action: "run 1", after: { $0.ended = true }),
        Row(
            start: .claimed, event: { .end(then: then) }, name: "end, producer running", action: "none",
            after: {
                $0.ended = true
                $0.owed = 1
            }),
        Row(
            start: .consumerWaiting, event: { .end(then: then) }, name: "end drops the waker", action: "none",
            after: {
                $0.ended = true
                $0.waker = false
                $0.owed = 1
            }),
        Row(start: .endedIdle, event: { .end(then: then) }, name: "end twice, idle (idempotent)", action: "run 1", after: { _ in }),
        Row(start: .endedWhileRunning, event: { .end(then: then) }, name: "end twice, running", action: "none", after: { $0.owed = 2 }),
        // restart
        Row(
            start: .read01, event: { .restart }, name: "restart", action: "none",
            after: {
                $0.generation = 1
                $0.produced = 0
                $0.consumed = -1
                $0.ready = []
            }),
        // claim
        Row(
            start: .launched, event: { .claim }, name: "claim two", action: "read 0+2 gen 0",
            after: {
                $0.produced = 2
                $0.claimed = [0, 1]
            }),
        Row(
            start: .read01, event: { .claim }, name: "claim the next two", action: "read 2+2 gen 0",
            after: {
                $0.produced = 4
                $0.claimed = [2, 3]
            }),
        Row(
            start: .endedWhileRunning, event: { .claim }, name: "claim after end: stops, owes run", action: "run 1",
            after: {
                $0.running = false
                $0.owed = 0
            }),
        Row(start: .fresh, event: { .claim }, name: "claim, not running (illegal: stops)", action: "run 0", after: { _ in }),
        // read
        Row(
            start: .claimed, event: { .read(State.Claim(first: 0, count: 2, generation: 0), slots: slots01) },
            name: "read, no one waits", action: "none",
            after: {
                $0.ready = [0, 1]
                $0.claimed = []
            }
        ),
        Row(
            start: .consumerWaiting, event: { .read(State.Claim(first: 0, count: 2, generation: 0), slots: slots01) },
            name: "read of a claim never made (illegal: dropped)", action: "wake waker",
            after: {
                $0.wakeAt = nil
                $0.waker = false
            }
        ),
        Row(
            start: .claimed, event: { .read(State.Claim(first: 0, count: 2, generation: 5), slots: slots01) },
            name: "read of another generation (stale: dropped)", action: "none",
            after: { _ in }
        ),
    ]

    @Test(arguments: rows) func transition(_ row: Row) {
        var state = Self.state(row.start)
        var expected = Seen(state)
        row.after(&expected)
        let action = state.event(row.event())
        #expect(Self.words(action) == row.action)
        #expect(Seen(state) == expected)
    }

    /// The consumer waits for a batch: woken once the claim reaching its wake-at chunk is read.
    @Test func aWaitingConsumerIsWokenByTheBatchNotEachChunk() {
        var state = State(slotCount: 8, dataChunkCount: 20)
        Self.apply(&state, [(.take(0), "launch"), (.claim, "read 0+2 gen 0"), (.look(0, waker: Self.waker), "notReady")])
        #expect(state.wakeAt == 3)
        let first = State.Claim(first: 0, count: 2, generation: 0)
        Self.apply(&state, [(.read(first, slots: Self.slots(first)), "none"), (.claim, "read 2+2 gen 0")])
        let second = State.Claim(first: 2, count: 2, generation: 0)
        Self.apply(&state, [(.read(second, slots: Self.slots(second)), "wake waker")])
        #expect(state.wakeAt == nil && state.waker == nil)
        Self.apply(&state, [(.look(0, waker: nil), "chunk 0")])
    }

    /// A failed chunk wakes the consumer at once, which gets the error; the ring is forgotten and
    /// a read of the claim made before the failure is dropped.
    @Test func aFailedChunkWakesTheConsumerAndForgetsTheRing() {
        var state = Self.state(.claimed)
        Self.apply(&state, [(.look(0, waker: nil), "wait")])
        let claim = State.Claim(first: 0, count: 2, generation: 0)
        // The consumer waited for chunk 1 (wake-at is 1): woken; chunk 0 is ready, 1 failed.
        Self.apply(&state, [(.read(claim, slots: Self.slots(claim, failing: [1])), "wake")])
        Self.apply(&state, [(.look(0, waker: nil), "chunk 0"), (.take(1), "none"), (.look(1, waker: nil), "failed")])
        #expect(state.generation == 1 && state.produced == 1)
        #expect(Seen(state).ready.isEmpty)
        Self.apply(&state, [(.read(claim, slots: Self.slots(claim)), "none")])
        #expect(Seen(state).ready.isEmpty)
    }

    /// The producer claims one chunk when only one slot is free or only one chunk is left,
    /// and stops when the ring is full or the body ends.
    @Test func theProducerClaimsWhatIsFreeAndStops() {
        var state = State(slotCount: 2, dataChunkCount: 3)
        Self.apply(&state, [(.take(0), "launch"), (.claim, "read 0+2 gen 0"), (.claim, "run 0")])
        #expect(!state.running)
        let claim = State.Claim(first: 0, count: 2, generation: 0)
        Self.apply(&state, [(.read(claim, slots: Self.slots(claim)), "none"), (.take(1), "launch"), (.claim, "read 2+1 gen 0"), (.claim, "run 0")])
        #expect(state.produced == 3 && !state.running)
        // Nothing left: a take of the last chunk launches nothing.
        Self.apply(&state, [(.take(2), "none")])
    }

    /// A restart while the producer reads: its claim is dropped, the consumer starts at 0.
    @Test func aRestartDropsTheClaimInFlight() {
        var state = Self.state(.claimed)
        Self.apply(&state, [(.restart, "none")])
        let claim = State.Claim(first: 0, count: 2, generation: 0)
        Self.apply(&state, [(.read(claim, slots: Self.slots(claim)), "none"), (.take(0), "none"), (.claim, "read 0+2 gen 1")])
        #expect(Seen(state).ready.isEmpty)
    }

    /// The end while the producer reads: the closures owed run once it claims again.
    @Test func theEndRunsItsClosuresOnceTheProducerStops() {
        var state = Self.state(.endedWhileRunning)
        let claim = State.Claim(first: 0, count: 2, generation: 0)
        Self.apply(&state, [(.read(claim, slots: Self.slots(claim)), "none"), (.claim, "run 1"), (.claim, "run 0")])
        #expect(!state.running && state.whenStopped.isEmpty)
    }
}
