import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `GlobPattern` is Python's `fnmatch` (what the AWS CLI's filters call): hand-made cases, then
/// random patterns checked against Python itself.
struct GlobPatternTests {
    @Test(arguments: [
        ("*.jpg", "a.jpg", true), ("*.jpg", "photos/2024/b.jpg", true), ("*.jpg", "a.jpeg", false),
        ("*", "", true), ("", "", true), ("", "a", false), ("a*b*c", "aXbYc", true), ("a*b*c", "aXbY", false),
        ("photos/*", "photos/a/b", true), ("?", "é", true), ("??", "é", false), ("a?c", "a/c", true),
        ("[abc]", "b", true), ("[abc]", "d", false), ("[!abc]", "d", true), ("[!abc]", "a", false),
        ("[a-c]x", "bx", true), ("[a-c]x", "dx", false), ("[z-a]", "m", false), ("[z-a]", "z", false),
        ("[", "[", true), ("a[", "a[", true), ("[]]", "]", true), ("[!]]", "]", false), ("[!]]", "x", true),
        ("[a-]", "-", true), ("[-a]", "-", true), ("[!-a]", "-", false), ("[!-a]", "b", true),
        ("[a-c-e]", "-", true), ("[a-c-e]", "d", false), ("[a-c-e]", "e", true), ("[!]", "!", false), ("[!]", "x", false),
        ("[!]x]", "a", true), ("\\*", "\\x", true), ("[^a]", "^", true), ("[^a]", "b", false),
        ("*%+#*", "x %+# y", true), ("日本*", "日本語.txt", true), ("[ä-ö]", "ü", false), ("[ä-ü]", "ö", true),
    ])
    func matchesAsFnmatchDoes(_ pattern: String, _ text: String, _ expected: Bool) {
        #expect(GlobPattern(pattern).matches(text) == expected, "\(pattern) ~ \(text)")
    }

    /// Random patterns over a small alphabet heavy in metacharacters, and texts over the same
    /// one, decided by Python's fnmatch and by GlobPattern: the same answer every time.
    @Test func agreesWithPythonOnRandomPatterns() async throws {
        var random = SeededGenerator(seed: testSeed("GlobPatternTests"))
        let patternAlphabet = Array("ab-/*?[]!^é")
        let textAlphabet = Array("ab-/[]!é")
        func word(_ alphabet: [Character], _ count: Int) -> String {
            String((0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
        }
        var pairs: [[String]] = []
        for _ in 0..<3_000 {
            pairs.append([word(patternAlphabet, Int(random.next() % 8)), word(textAlphabet, Int(random.next() % 7))])
        }
        let answers = try #require(try await runPythonPeer("awscli_walk_peer.py", input: ["fnmatch": pairs]) as? [Bool])
        #expect(answers.count == pairs.count)
        var disagreements = 0
        for (pair, expected) in zip(pairs, answers) where GlobPattern(pair[0]).matches(pair[1]) != expected {
            disagreements += 1
            if disagreements <= 5 { Issue.record("'\(pair[0])' ~ '\(pair[1])': Python says \(expected)") }
        }
        #expect(disagreements == 0)
    }
}
