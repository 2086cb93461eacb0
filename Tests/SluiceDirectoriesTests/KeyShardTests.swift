import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport

/// `KeyShard` (`--shard K/N`): the function pinned (a change of it would split a running job
/// differently on machines with different builds), the shards of any N disjoint and covering,
/// and `K/N` parsed strictly.
struct KeyShardTests {
    /// Shards computed by Python, the reference the documentation gives:
    /// `int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big") % N`.
    @Test(arguments: [
        ("", 0, 1, 261_652),
        ("a", 2, 4, 962_250),
        ("photos/2026/1.jpg", 3, 6, 584_227),
        ("caf\u{E9}", 1, 6, 552_649),
        ("cafe\u{301}", 3, 6, 292_679),
        ("x%+#y z", 0, 3, 714_448),
        ("line\nbreak", 0, 4, 235_356),
    ])
    func theFunctionIsPinned(path: String, of4: Int, of7: Int, ofAMillion: Int) {
        #expect(KeyShard.index(of: path, count: 4) == of4)
        #expect(KeyShard.index(of: path, count: 7) == of7)
        #expect(KeyShard.index(of: path, count: KeyShard.maximumCount) == ofAMillion)
        #expect(KeyShard.index(of: path, count: 1) == 0)
    }

    /// NFC and NFD spellings are different bytes, so different keys: each has its own shard
    /// (Swift's `==` takes them for equal; the hash must not).
    @Test func theBytesDecideNotCanonicalEquivalence() {
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect(KeyShard.index(of: "caf\u{E9}", count: 4) != KeyShard.index(of: "cafe\u{301}", count: 4))
    }

    /// For random paths and random N, exactly one shard of N contains each path, and every
    /// shard of a few N is met (the split is not degenerate).
    @Test func theShardsAreDisjointAndCovering() throws {
        var random = SeededGenerator(seed: testSeed("KeyShardTests"))
        let alphabet = Array("abc/é .-_0123\u{301}")
        for _ in 0..<200 {
            let count = Int.random(in: 1...40, using: &random)
            let shards = try (0..<count).map { try KeyShard(index: $0, count: count) }
            for _ in 0..<20 {
                let path = String((0..<Int.random(in: 0...24, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
                let holding = shards.filter { $0.contains(path) }
                #expect(holding.count == 1, "\(path) of \(count)")
                #expect(holding.first?.index == KeyShard.index(of: path, count: count))
            }
        }
        for count in [2, 4, 16] {
            let met = Set((0..<2_000).map { KeyShard.index(of: "file-\($0)", count: count) })
            #expect(met.count == count)
        }
    }

    @Test(arguments: ["0/1", "3/4", "0/1000000", "999999/1000000", "007/8"])
    func takes(_ text: String) throws {
        let shard = try KeyShard(parsing: text)
        #expect("\(shard.index)/\(shard.count)" == text.replacingOccurrences(of: "007", with: "7"))
    }

    @Test(arguments: [
        ("5/4", KeyShardError.Problem.index), ("4/4", .index), ("0/0", .count), ("1/1000001", .count),
        ("1/99999999999999999999999", .count), ("99999999999999999999999/4", .index),
        ("-1/4", .syntax), ("+1/4", .syntax), ("a/b", .syntax), ("1", .syntax), ("", .syntax), (" 1/4", .syntax),
        ("1/4 ", .syntax), ("1/4/2", .syntax), ("/4", .syntax), ("1/", .syntax), ("１/4", .syntax),
    ])
    func refuses(_ text: String, _ problem: KeyShardError.Problem) {
        #expect(throws: KeyShardError(text: text, problem: problem)) { try KeyShard(parsing: text) }
    }

    /// The filter takes a path only in its shard, after its rules, for files and objects alike.
    @Test func aFilterWithAShard() throws {
        let shard = try KeyShard(index: 2, count: 4)
        let filter = PathFilter([.exclude(GlobPattern("*.log"))], shard: shard)
        #expect(filter.includes("a", root: "/r"))  // "a" is in shard 2 of 4 (pinned above)
        #expect(!filter.includes("photos/2026/1.jpg", root: "/r"))
        #expect(!filter.includes("a.log", root: "/r"))  // the rules first
    }
}
