/// "Did you mean …?" for a mistyped command, subcommand or option, as git and rclone offer it:
/// the closest known word by edit distance (a swap of two neighbours counts as one edit), when
/// it is close enough to be the word meant.
enum Suggestion {
    /// The candidate `word` most likely meant, or nil when none is close: at most one edit
    /// for words of two to four letters, two up to eight, three beyond; or a candidate that
    /// `word` begins (`--recursiv`). A one-letter word (`-Z`) is one edit from every other
    /// letter: nothing is suggested for it. Ties go to the first candidate.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let core = word.drop { $0 == "-" }.count
        guard core >= 2, !candidates.contains(word) else { return nil }
        let letters = Array(word.unicodeScalars)
        let limit = core <= 4 ? 1 : core <= 8 ? 2 : 3
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = Self.distance(letters, Array(candidate.unicodeScalars), atMost: limit)
            if distance <= limit, distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        if let best { return best.candidate }
        if core >= 3 { return candidates.first { $0.hasPrefix(word) } }
        return nil
    }

    /// The line's hint: `: did you mean --dryrun?`, or "" when nothing is close; `quoted`
    /// puts the word in quotes as the line quotes what was typed (`'upload'`).
    static func hint(for word: String, among candidates: [String], quoted: Bool = false) -> String {
        closest(to: word, among: candidates).map { quoted ? ": did you mean '\($0)'?" : ": did you mean \($0)?" } ?? ""
    }

    /// Optimal string alignment distance between `a` and `b` (insertions, deletions,
    /// substitutions and swaps of neighbours, each 1); any value above `atMost` is reported as
    /// `atMost + 1` (the rows stop early), so a long argument costs little.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var smallest = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { value = min(value, before[j - 2] + 1) }
                current[j] = value
                smallest = min(smallest, value)
            }
            if smallest > limit { return limit + 1 }
            (before, previous, current) = (previous, current, before)
        }
        return min(previous[b.count], limit + 1)
    }
}
