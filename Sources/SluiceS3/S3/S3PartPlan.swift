/// How an object is cut into multipart parts.
///
/// - Known length: equal parts (the last may be shorter). The default part size is at least
///   8 MiB, grown (to a whole MiB) so that there are never more than 10,000 parts; a part
///   size given explicitly is used as given, and a plan that would need more than 10,000
///   parts is refused before any byte is sent, naming the smallest size that fits.
/// - Unknown length (a stream): parts start at the first part size and double every
///   `partsPerStep` parts (never above 5 GiB), so 10,000 parts reach far past
///   10,000 × the first size. With `equalParts`, every part has the first size and the
///   stream fails when it goes past 10,000 of them.
///
/// Part numbers are 1-based, as in S3.
public struct S3PartPlan: Sendable, Equatable, Codable {
    /// S3's limits.
    public static let maximumParts = 10_000
    /// The smallest part S3 accepts, but for the last (5 MiB).
    public static let minimumPartSize: Int64 = 5 << 20
    /// The largest part S3 accepts (5 GiB).
    public static let maximumPartSize: Int64 = 5 << 30
    /// The default part size: the floor the planner grows from.
    public static let defaultPartSize: Int64 = 8 << 20
    /// How many stream parts share one size before it doubles.
    public static let partsPerStep = 1_000

    /// The size of part 1 (and, for equal parts, of every part but the last).
    public var partSize: Int64
    /// The object's length, or nil for a stream whose length is not known.
    public var length: Int64?
    /// Whether every part but the last has `partSize` bytes.
    public var equalParts: Bool
    /// For a stream, how many parts share one size before it doubles; nil for `partsPerStep`.
    public var stepParts: Int?

    /// Plans a source of known length.
    ///
    /// - Parameters:
    ///   - length: The object's length in bytes.
    ///   - partSize: An explicit part size, used exactly; nil for the default (grown to fit).
    /// - Throws: `S3Error` with code `.tooManyParts`, `.partTooLarge` or `.objectTooLarge`,
    ///   or `.invalidOption` for a part size below S3's 5 MiB minimum.
    public init(length: Int64, partSize: Int64? = nil) throws {
        precondition(length >= 0)
        let limit = Int64(Self.maximumParts) * Self.maximumPartSize
        guard length <= limit else {
            throw S3Error(.objectTooLarge, "\(length) bytes is more than S3 stores in one object (10,000 parts of 5 GiB = \(limit) bytes)")
        }
        let size: Int64
        if let partSize {
            try Self.validate(partSize: partSize)
            let needed = Self.divideRoundingUp(length, partSize)
            guard needed <= Int64(Self.maximumParts) else {
                let fitting = Self.roundUpToMiB(Self.divideRoundingUp(length, Int64(Self.maximumParts)))
                throw S3Error(.tooManyParts, "\(length) bytes in parts of \(partSize) needs \(needed) parts; S3 allows 10,000: use a part size of \(fitting >> 20) MiB or more")
            }
            size = partSize
        } else {
            size = min(Self.maximumPartSize, max(Self.defaultPartSize, Self.roundUpToMiB(Self.divideRoundingUp(length, Int64(Self.maximumParts)))))
        }
        self.partSize = size
        self.length = length
        self.equalParts = true
    }

    /// Plans a stream of unknown length.
    ///
    /// - Parameters:
    ///   - firstPartSize: The size parts start at; nil for the default.
    ///   - equalParts: Keep every part at `firstPartSize` (for stores that refuse growing
    ///     parts: Cloudflare R2, Garage); the stream then fails past 10,000 parts.
    ///   - stepParts: Parts per size step; the default `partsPerStep` (tests use fewer).
    /// - Throws: `S3Error` with code `.invalidOption` or `.partTooLarge`.
    public init(streamWithFirstPartSize firstPartSize: Int64? = nil, equalParts: Bool = false, stepParts: Int? = nil) throws {
        let size = firstPartSize ?? Self.defaultPartSize
        try Self.validate(partSize: size)
        precondition(stepParts.map { $0 >= 1 } ?? true)
        self.partSize = size
        self.length = nil
        self.equalParts = equalParts
        self.stepParts = stepParts
    }

    package static func validate(partSize: Int64) throws(S3Error) {
        guard partSize >= Self.minimumPartSize else {
            throw S3Error(.invalidOption, "part size \(partSize) is below S3's minimum of 5 MiB (\(Self.minimumPartSize) bytes)")
        }
        guard partSize <= Self.maximumPartSize else {
            throw S3Error(.partTooLarge, "part size \(partSize) is above S3's maximum of 5 GiB (\(Self.maximumPartSize) bytes)")
        }
    }

    /// The number of parts; nil for a stream. 1 for an empty object (one empty part).
    public var partCount: Int? {
        guard let length else { return nil }
        return max(1, Int(Self.divideRoundingUp(length, partSize)))
    }

    /// The size part `number` has when it is full (the last part of a known length may be shorter).
    ///
    /// A stream's parts double every `stepParts` parts and saturate at S3's 5 GiB maximum: the
    /// doubling stops there, whatever the step, so the size never wraps.
    public func nominalSize(ofPart number: Int) -> Int64 {
        precondition(number >= 1)
        if equalParts || length != nil { return partSize }
        let step = (number - 1) / (stepParts ?? Self.partsPerStep)
        guard partSize > 0 else { return partSize }
        // partSize × 2^step ≥ maximumPartSize exactly when partSize > (maximumPartSize - 1) >> step.
        if step >= Int64.bitWidth - 1 || partSize > (Self.maximumPartSize - 1) >> step {
            return Self.maximumPartSize
        }
        return partSize << step
    }

    /// Where part `number` starts in the object.
    public func offset(ofPart number: Int) -> Int64 {
        precondition(number >= 1)
        if equalParts || length != nil { return Int64(number - 1) * partSize }
        var offset: Int64 = 0
        var done = 0
        while done < number - 1 {
            let perStep = stepParts ?? Self.partsPerStep
            let run = min(perStep - done % perStep, number - 1 - done)
            offset += Int64(run) * nominalSize(ofPart: done + 1)
            done += run
        }
        return offset
    }

    /// The byte range of part `number` for a known length.
    public func range(ofPart number: Int) -> Range<Int64> {
        guard let length, let count = partCount else { preconditionFailure("range(ofPart:) needs a known length") }
        precondition(number >= 1 && number <= count)
        let start = offset(ofPart: number)
        return start..<min(length, start + partSize)
    }

    /// The most bytes a stream can carry in 10,000 parts under this plan.
    public var streamCapacity: Int64 { streamCapacity(parts: Self.maximumParts) }

    /// The most bytes a stream can carry in `parts` parts under this plan.
    package func streamCapacity(parts: Int) -> Int64 { offset(ofPart: parts) + nominalSize(ofPart: parts) }

    package static func divideRoundingUp(_ a: Int64, _ b: Int64) -> Int64 { a == 0 ? 0 : (a - 1) / b + 1 }
    package static func roundUpToMiB(_ value: Int64) -> Int64 { divideRoundingUp(value, 1 << 20) << 20 }
}
