import SluicePrimitives

/// Shard `index` of `count` (`--shard K/N`): the files and objects whose path falls in it, so
/// that N runs of one job, on as many machines, each take a disjoint part and together all of it.
///
/// The shard of a path is a fixed function of its bytes, the same on every machine, run and
/// platform (never Swift's `Hasher`, which is seeded per process):
///
///     shard(path, N) = UInt64(big-endian, first 8 bytes of SHA-256(UTF-8 bytes of path)) mod N
///
/// where `path` is the file's path below the job's root with `/` separators, which is also the
/// object's key less the prefix (`2026/1.jpg` for `s3://b/photos/2026/1.jpg` under
/// `s3://b/photos/`): the same tree splits the same way whatever the prefix. Another tool
/// computes it as Python does:
///
///     int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big") % N
///
/// `KeyShardTests` pins a few paths' shards, so a change of the function fails a test.
public struct KeyShard: Sendable, Equatable, CustomStringConvertible {
    /// The shard taken, from 0 to `count - 1` (Kubernetes' `JOB_COMPLETION_INDEX`).
    public let index: Int
    /// The number of shards.
    public let count: Int

    /// The most shards a job may be split into.
    public static let maximumCount = 1_000_000

    /// Shard `index` of `count`.
    ///
    /// - Parameters:
    ///   - index: From 0 to `count - 1`.
    ///   - count: From 1 to `maximumCount`.
    /// - Throws: `KeyShardError` when either is out of range.
    public init(index: Int, count: Int) throws(KeyShardError) {
        try self.init(index: index, count: count, text: "\(index)/\(count)")
    }

    private init(index: Int, count: Int, text: String) throws(KeyShardError) {
        guard (1...Self.maximumCount).contains(count) else { throw KeyShardError(text: text, problem: .count) }
        guard (0..<count).contains(index) else { throw KeyShardError(text: text, problem: .index) }
        self.index = index
        self.count = count
    }

    /// `K/N` as written on a command line: two whole numbers in decimal, no sign, no spaces.
    ///
    /// - Throws: `KeyShardError` for any other text, or numbers out of range.
    public init(parsing text: String) throws(KeyShardError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        // Digits only (Int("+1") and Int("-1") parse, and are not a shard); more digits than
        // an Int holds is a number too large.
        func number(_ part: Substring) -> Int? {
            guard !part.isEmpty, part.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int(part) ?? Int.max
        }
        guard parts.count == 2, let index = number(parts[0]), let count = number(parts[1]) else {
            throw KeyShardError(text: text, problem: .syntax)
        }
        try self.init(index: index, count: count, text: text)
    }

    /// The shard, of `count`, that `path` falls in (the function above).
    ///
    /// - Parameters:
    ///   - path: The path below the root (the key less the prefix).
    ///   - count: The number of shards, more than 0.
    public static func index(of path: some StringProtocol, count: Int) -> Int {
        precondition(count > 0, "KeyShard.index(of:count:) needs a count more than 0")
        let digest = Digest(.sha256)
        var bytes = String(path)
        bytes.withUTF8 { digest.update(UnsafeRawBufferPointer($0)) }
        let hash = digest.finalize().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(hash % UInt64(count))
    }

    /// Whether `path` (below the root) falls in this shard.
    public func contains(_ path: some StringProtocol) -> Bool {
        count == 1 || Self.index(of: path, count: count) == index
    }

    /// `K/N`.
    public var description: String { "\(index)/\(count)" }
}

/// A `--shard` that is not `K/N` with `K` from 0 to `N - 1` and `N` from 1 to `KeyShard.maximumCount`.
public struct KeyShardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with it.
    public enum Problem: Sendable, Equatable {
        /// Not two whole numbers separated by `/`.
        case syntax
        /// N is 0 or more than `KeyShard.maximumCount`.
        case count
        /// K is not below N.
        case index
    }

    /// The shard as written.
    public var text: String
    /// What is wrong with it.
    public var problem: Problem

    /// What is wrong, without the option's name (the command line puts `--shard ` before it).
    public var description: String {
        let rule = "K/N, K from 0 to N-1 and N from 1 to \(KeyShard.maximumCount)"
        switch problem {
        case .syntax: return "needs \(rule) (as 0/4), got '\(text)'"
        case .count: return "\(text): N must be from 1 to \(KeyShard.maximumCount)"
        case .index: return "\(text): K must be from 0 to N-1"
        }
    }
}
