#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An order of object keys (and of the paths a `DirectoryWalk` yields): what a merge-join of a
/// walk against a listing needs both sides to share.
public enum KeyOrder: Sendable, Equatable {
    /// S3's: the keys' UTF-8 bytes (`a-b` < `a.txt` < `a/b`).
    case s3
    /// A file system's, as servers on one list (SeaweedFS): component by component, so a
    /// directory's keys come before the names that extend its name (`a/b` < `a-b` < `a.txt`):
    /// the bytes, with `/` below every other byte.
    case hierarchical

    /// Whether `a` comes before `b`.
    public func precedes(_ a: some Sequence<UInt8>, _ b: some Sequence<UInt8>) -> Bool {
        switch self {
        case .s3: return a.lexicographicallyPrecedes(b)
        case .hierarchical:
            return a.lexicographicallyPrecedes(b) { x, y in
                (x == 0x2F ? 0 : Int(x) + 1) < (y == 0x2F ? 0 : Int(y) + 1)
            }
        }
    }

    /// `precedes` on the bytes of two buffers, compared in place (`memcmp` for S3's order): what
    /// an external sort of millions of keys calls (`RecordSorter`).
    package func precedes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        let common = min(a.count, b.count)
        switch self {
        case .s3:
            let compared = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
            return compared != 0 ? compared < 0 : a.count < b.count
        case .hierarchical:
            for index in 0..<common where a[index] != b[index] {
                let (x, y) = (a[index], b[index])
                return (x == 0x2F ? 0 : Int(x) + 1) < (y == 0x2F ? 0 : Int(y) + 1)
            }
            return a.count < b.count
        }
    }

    /// `precedes` on two arrays' bytes, compared in place.
    package func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in precedes(a, b) } }
    }
}
