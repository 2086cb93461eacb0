/// Deterministic, random-access bytes of any size: `synthetic:SIZE[:SEED]`.
///
/// Byte `i` is byte `i mod 8` of the little-endian word `w(i div 8)`, the splitmix64
/// output for state `seed &+ (k + 1) &* 0x9E3779B97F4A7C15`. Generation runs at several
/// GB/s and costs no memory.
public struct SyntheticByteSource: ByteSource {
    public let length: Int64
    /// Always: its bytes are a function of its length and seed.
    public var isPinned: Bool { true }
    /// The splitmix64 seed: the same seed and offset give the same bytes.
    public let seed: UInt64

    /// A source of `length` deterministic bytes (`synthetic:SIZE:SEED` on the command line).
    public init(length: Int64, seed: UInt64 = 0) {
        precondition(length >= 0, "length must not be negative")
        self.length = length
        self.seed = seed
    }

    /// The 64-bit word at index `k`.
    @inline(__always)
    public func word(_ k: UInt64) -> UInt64 {
        var z = seed &+ (k &+ 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        let count = Int(min(Int64(buffer.count), length - offset))
        guard count > 0, let base = buffer.baseAddress else { return 0 }
        var position = 0
        var k = UInt64(offset) >> 3
        // Leading bytes of a word that starts before `offset`.
        var skip = Int(offset & 7)
        if skip != 0 {
            let w = word(k).littleEndian
            withUnsafeBytes(of: w) { bytes in
                while skip < 8 && position < count {
                    base.storeBytes(of: bytes[skip], toByteOffset: position, as: UInt8.self)
                    skip += 1
                    position += 1
                }
            }
            k += 1
        }
        // Whole words, four at a time (independent, so they overlap; one word a turn made
        // the loop's speed hang on where the linker put it: 10 % between two builds of the same
        // instructions), then one at a time.
        while position + 32 <= count {
            let (a, b, c, d) = (word(k), word(k + 1), word(k + 2), word(k + 3))
            base.storeBytes(of: a.littleEndian, toByteOffset: position, as: UInt64.self)
            base.storeBytes(of: b.littleEndian, toByteOffset: position + 8, as: UInt64.self)
            base.storeBytes(of: c.littleEndian, toByteOffset: position + 16, as: UInt64.self)
            base.storeBytes(of: d.littleEndian, toByteOffset: position + 24, as: UInt64.self)
            position += 32
            k += 4
        }
        while position + 8 <= count {
            base.storeBytes(of: word(k).littleEndian, toByteOffset: position, as: UInt64.self)
            position += 8
            k += 1
        }
        // Trailing bytes.
        if position < count {
            let w = word(k).littleEndian
            withUnsafeBytes(of: w) { bytes in
                var index = 0
                while position < count {
                    base.storeBytes(of: bytes[index], toByteOffset: position, as: UInt8.self)
                    index += 1
                    position += 1
                }
            }
        }
        return count
    }
}
