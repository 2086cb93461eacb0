import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The part planner: 8 MiB floor, never more than 10,000 parts, never above 5 GiB, explicit
/// sizes refused before any byte when they cannot fit, growing parts for streams.
struct S3PartPlanTests {
    let mib: Int64 = 1 << 20
    let gib: Int64 = 1 << 30

    /// Every plan covers the object exactly, in at most 10,000 parts of 5 MiB ... 5 GiB.
    func checkCovers(_ plan: S3PartPlan, length: Int64) {
        let count = plan.partCount!
        #expect(count >= 1 && count <= S3PartPlan.maximumParts)
        #expect(plan.partSize >= S3PartPlan.minimumPartSize && plan.partSize <= S3PartPlan.maximumPartSize)
        #expect(plan.range(ofPart: 1).lowerBound == 0)
        #expect(plan.range(ofPart: count).upperBound == length)
        if count > 1 {
            #expect(plan.range(ofPart: count - 1).count == Int(plan.partSize))
            #expect(plan.range(ofPart: count).count >= 1)
            #expect(plan.range(ofPart: count - 1).upperBound == plan.range(ofPart: count).lowerBound)
        }
    }

    @Test func defaultsToEightMiB() throws {
        for length: Int64 in [0, 1, 8 * mib - 1, 8 * mib, 8 * mib + 1, 3 * 8 * mib, gib, 78 * gib] {
            let plan = try S3PartPlan(length: length)
            #expect(plan.partSize == 8 * mib, "length \(length)")
            checkCovers(plan, length: length)
        }
        #expect(try S3PartPlan(length: 0).partCount == 1)
        #expect(try S3PartPlan(length: 8 * mib).partCount == 1)
        #expect(try S3PartPlan(length: 8 * mib + 1).partCount == 2)
        #expect(try S3PartPlan(length: 80_000 * mib).partCount == 10_000)
    }

    @Test func growsToStayWithinTenThousandParts() throws {
        // Just past 10,000 × 8 MiB: the size grows to the next whole MiB.
        let plan = try S3PartPlan(length: 80_000 * mib + 1)
        #expect(plan.partSize == 9 * mib)
        checkCovers(plan, length: 80_000 * mib + 1)
        var generator = SeededGenerator(seed: testSeed("S3PartPlanTests.grows"))
        let limit = 10_000 * 5 * gib
        var lengths: [Int64] = [limit, limit - 1, 10_000 * 5 * gib - 5 * gib + 1, 1 << 40, 5 << 40]
        for _ in 0..<2000 { lengths.append(Int64.random(in: 0...limit, using: &generator)) }
        for length in lengths {
            let plan = try S3PartPlan(length: length)
            checkCovers(plan, length: length)
            // The smallest whole-MiB size ≥ 8 MiB that fits.
            #expect(plan.partSize % mib == 0)
            if plan.partSize > 8 * mib {
                #expect(S3PartPlan.divideRoundingUp(length, plan.partSize - mib) > 10_000, "length \(length)")
            }
        }
        #expect(try S3PartPlan(length: limit).partSize == 5 * gib)
    }

    @Test func refusesObjectsBeyondTenThousandMaximalParts() {
        #expect(throws: S3Error.self) { try S3PartPlan(length: 10_000 * 5 * gib + 1) }
    }

    @Test func usesAnExplicitSizeExactlyOrNamesTheOneThatFits() throws {
        let plan = try S3PartPlan(length: 100 * mib + 1, partSize: 5 * mib)
        #expect(plan.partSize == 5 * mib && plan.partCount == 21)
        checkCovers(plan, length: 100 * mib + 1)
        let exact = try S3PartPlan(length: 10_000 * 5 * mib, partSize: 5 * mib)
        #expect(exact.partCount == 10_000)
        do {
            _ = try S3PartPlan(length: 10_000 * 5 * mib + 1, partSize: 5 * mib)
            Issue.record("10,001 parts were planned")
        } catch let error as S3Error {
            #expect(error.code == .tooManyParts)
            #expect(error.message.contains("10001 parts"), "\(error.message)")
            #expect(error.message.contains("part size of 6 MiB"), "\(error.message)")
        }
        #expect(throws: S3Error.self) { try S3PartPlan(length: 1, partSize: 5 * mib - 1) }
        #expect(throws: S3Error.self) { try S3PartPlan(length: 1, partSize: 5 * gib + 1) }
        #expect(try S3PartPlan(length: 1, partSize: 5 * gib).partCount == 1)
    }

    @Test func streamPartsGrowSoTenThousandCarryFarMore() throws {
        let plan = try S3PartPlan(streamWithFirstPartSize: 8 * mib)
        #expect(plan.partCount == nil)
        #expect(plan.nominalSize(ofPart: 1) == 8 * mib)
        #expect(plan.nominalSize(ofPart: 1000) == 8 * mib)
        #expect(plan.nominalSize(ofPart: 1001) == 16 * mib)
        #expect(plan.offset(ofPart: 1001) == 1000 * 8 * mib)
        #expect(plan.offset(ofPart: 2001) == 1000 * 8 * mib + 1000 * 16 * mib)
        // Offsets are the running sum of sizes, part by part.
        var offset: Int64 = 0
        for number in 1...S3PartPlan.maximumParts {
            #expect(plan.offset(ofPart: number) == offset)
            let size = plan.nominalSize(ofPart: number)
            #expect(size >= S3PartPlan.minimumPartSize && size <= S3PartPlan.maximumPartSize)
            if number > 1 { #expect(size >= plan.nominalSize(ofPart: number - 1)) }
            offset += size
        }
        #expect(plan.streamCapacity == offset)
        #expect(plan.streamCapacity > 5 << 40, "8 MiB first parts carry more than 5 TiB")
        #expect(plan.streamCapacity > 100 * Int64(S3PartPlan.maximumParts) * 8 * mib)
        // The smallest first part still goes far past 10,000 × itself; the cap holds.
        let smallest = try S3PartPlan(streamWithFirstPartSize: 5 * mib)
        #expect(smallest.streamCapacity > 10_000 * 5 * mib * 100)
        let largest = try S3PartPlan(streamWithFirstPartSize: 5 * gib)
        #expect(largest.nominalSize(ofPart: 10_000) == 5 * gib)
    }

    /// Doubling saturates at 5 GiB at every step, however far: a 4 GiB first part shifted by
    /// 31 steps once wrapped to Int64.min.
    /// `first` doubled `times` times, stopping at 5 GiB (the long way, for comparison).
    func doubled(_ first: Int64, times: Int) -> Int64 {
        var size = first
        var left = times
        while left > 0 && size < S3PartPlan.maximumPartSize {
            size = min(S3PartPlan.maximumPartSize, size * 2)
            left -= 1
        }
        return size
    }

    @Test func streamPartSizesSaturateAtTheMaximum() throws {
        for first in [5 * mib, 8 * mib, gib, 4 * gib, 5 * gib - 1, 5 * gib] {
            let plan = try S3PartPlan(streamWithFirstPartSize: first, stepParts: 1)
            var previous = first
            for number in [1, 2, 3, 10, 11, 31, 32, 33, 34, 62, 63, 64, 65, 100, 1_000, S3PartPlan.maximumParts, Int.max / 2] {
                let size = plan.nominalSize(ofPart: number)
                #expect(size >= previous, "first \(first), part \(number): \(size) < \(previous)")
                #expect(size <= S3PartPlan.maximumPartSize, "first \(first), part \(number): \(size)")
                #expect(size == doubled(first, times: number - 1), "first \(first), part \(number)")
                previous = size
            }
            #expect(plan.nominalSize(ofPart: S3PartPlan.maximumParts) == S3PartPlan.maximumPartSize)
            #expect(plan.streamCapacity > 0)
        }
        // The default step: part 31,001 of a 4 GiB start is step 31.
        let wide = try S3PartPlan(streamWithFirstPartSize: 4 * gib)
        #expect(wide.nominalSize(ofPart: 31_001) == S3PartPlan.maximumPartSize)
        #expect(wide.nominalSize(ofPart: 1) == 4 * gib)
        #expect(wide.nominalSize(ofPart: 1_001) == S3PartPlan.maximumPartSize)
    }

    @Test func equalStreamPartsStopAtTenThousand() throws {
        let plan = try S3PartPlan(streamWithFirstPartSize: 5 * mib, equalParts: true)
        #expect(plan.nominalSize(ofPart: 10_000) == 5 * mib)
        #expect(plan.offset(ofPart: 10_000) == 9_999 * 5 * mib)
        #expect(plan.streamCapacity == 10_000 * 5 * mib)
    }
}

/// What the parts in flight hold beside the part itself stays within a fixed budget at every
/// allowed concurrency: the signed read-ahead (16 MiB in all) and libcurl's two buffers per
/// connection (2 MiB in all, never below 16 KiB each), so peak RSS does not grow with it.
struct S3MemoryBudgetTests {
    @Test func perPartMemoryShrinksAsConcurrencyGrows() throws {
        for concurrency in [1, 2, 8, 9, 64, 128, 255, 256] {
            var options = S3Options()
            options.concurrency = concurrency
            try options.validate()
            #expect(options.readAheadPerPart * concurrency <= S3Options.readAheadBudget)
            let buffer = options.requestTransfer.bufferSize
            #expect(buffer >= 16 << 10 && buffer <= options.transfer.bufferSize)
            #expect(buffer * concurrency <= S3Options.connectionBufferBudget || buffer == 16 << 10, "concurrency \(concurrency)")
        }
        var eight = S3Options()
        eight.concurrency = 8
        #expect(eight.readAheadPerPart == AWSChunkedBody.defaultReadAhead)
        // A smaller buffer the caller asked for is kept.
        eight.transfer.bufferSize = 20_000
        #expect(eight.requestTransfer.bufferSize == 20_000)
    }
}
