/// A shell-style pattern with the rules of Python's `fnmatch` (POSIX, case-sensitive), which the
/// AWS CLI's `--include`/`--exclude` filters use: `*` matches any run of characters, `/`
/// included; `?` one character; `[seq]` one character in the set and `[!seq]` one not in it,
/// with ranges `a-z`; a `[` with no closing `]` is a literal `[`. There is no escape character.
///
/// Matching compares Unicode scalars, as Python compares code points.
public struct GlobPattern: Sendable, Equatable, CustomStringConvertible {
    /// One piece of a compiled pattern.
    package enum Token: Sendable, Equatable {
        case literal(Unicode.Scalar)
        case anyOne
        case anyRun
        /// A bracket expression: single scalars and closed ranges, possibly negated. An empty,
        /// non-negated set matches nothing (Python compiles it to `(?!)`).
        case set(singles: [Unicode.Scalar], ranges: [ClosedRange<Unicode.Scalar>], negated: Bool)
    }

    /// The pattern as written.
    public let description: String
    package let tokens: [Token]

    /// Compiles `pattern`. Every string is a valid pattern.
    public init(_ pattern: String) {
        description = pattern
        tokens = Self.compile(Array(pattern.unicodeScalars))
    }

    /// Whether `text` matches the whole pattern.
    public func matches(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        // Two pointers with one backtrack point: `*` matches any scalar, so the last `*` seen
        // is the only one that ever needs to take more (the classic wildcard match).
        var t = 0, s = 0
        var star: (token: Int, scalar: Int)?
        while s < scalars.count {
            if t < tokens.count, tokens[t] != .anyRun, Self.token(tokens[t], matches: scalars[s]) {
                t += 1
                s += 1
            } else if t < tokens.count, tokens[t] == .anyRun {
                star = (t, s)
                t += 1
            } else if let last = star {
                star = (last.token, last.scalar + 1)
                t = last.token + 1
                s = last.scalar + 1
            } else {
                return false
            }
        }
        while t < tokens.count, tokens[t] == .anyRun { t += 1 }
        return t == tokens.count
    }

    package static func token(_ token: Token, matches scalar: Unicode.Scalar) -> Bool {
        switch token {
        case .literal(let literal): return literal == scalar
        case .anyOne: return true
        case .anyRun: return true
        case .set(let singles, let ranges, let negated):
            let inSet = singles.contains(scalar) || ranges.contains { $0.contains(scalar) }
            return inSet != negated
        }
    }

    package static func compile(_ pattern: [Unicode.Scalar]) -> [Token] {
        var tokens: [Token] = []
        var i = 0
        while i < pattern.count {
            let c = pattern[i]
            i += 1
            switch c {
            case "*":
                if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?":
                tokens.append(.anyOne)
            case "[":
                if let (token, next) = bracket(pattern, from: i) {
                    tokens.append(token)
                    i = next
                } else {
                    tokens.append(.literal("["))
                }
            default:
                tokens.append(.literal(c))
            }
        }
        return tokens
    }

    /// The bracket expression whose content starts at `start` (just after `[`), and the index
    /// after its `]`; nil when it has no closing `]`. Follows `fnmatch.translate`: a `]` first
    /// (after an optional `!`) is literal; `-` between two characters is a range, first and
    /// last it is literal; a reversed range is dropped with its two ends.
    package static func bracket(_ pattern: [Unicode.Scalar], from start: Int) -> (Token, Int)? {
        var j = start
        if j < pattern.count, pattern[j] == "!" { j += 1 }
        if j < pattern.count, pattern[j] == "]" { j += 1 }
        while j < pattern.count, pattern[j] != "]" { j += 1 }
        guard j < pattern.count else { return nil }
        // Python cuts the content at the hyphens that make ranges: the first character (after
        // `!`) is never a range's hyphen, and after a range the search skips its end.
        var chunks: [[Unicode.Scalar]] = []
        var chunkStart = start
        var k = pattern[start] == "!" ? start + 2 : start + 1
        while k < j {
            guard let hyphen = pattern[k..<j].firstIndex(of: "-") else { break }
            chunks.append(Array(pattern[chunkStart..<hyphen]))
            chunkStart = hyphen + 1
            k = hyphen + 3
        }
        let tail = Array(pattern[chunkStart..<j])
        if tail.isEmpty, !chunks.isEmpty {
            chunks[chunks.count - 1].append("-")
        } else {
            chunks.append(tail)
        }
        // Reversed ranges go, ends and all.
        var index = chunks.count - 1
        while index > 0 {
            if let end = chunks[index - 1].last, let first = chunks[index].first, end > first {
                chunks[index - 1] = Array(chunks[index - 1].dropLast()) + Array(chunks[index].dropFirst())
                chunks.remove(at: index)
            }
            index -= 1
        }
        // What is left: literal scalars, with a range between each chunk's last scalar and the
        // next one's first.
        var scalars: [Unicode.Scalar] = []
        var rangeAfter: Set<Int> = []
        for (position, chunk) in chunks.enumerated() {
            if position > 0 { rangeAfter.insert(scalars.count - 1) }
            scalars.append(contentsOf: chunk)
        }
        if scalars.isEmpty { return (.set(singles: [], ranges: [], negated: false), j + 1) }
        var negated = false
        var first = 0
        if scalars[0] == "!" {
            if scalars.count == 1 { return (.anyOne, j + 1) }
            negated = true
            first = 1
        }
        var singles: [Unicode.Scalar] = []
        var ranges: [ClosedRange<Unicode.Scalar>] = []
        var position = first
        while position < scalars.count {
            if rangeAfter.contains(position), position + 1 < scalars.count {
                ranges.append(scalars[position]...scalars[position + 1])
                position += 2
            } else {
                singles.append(scalars[position])
                position += 1
            }
        }
        return (.set(singles: singles, ranges: ranges, negated: negated), j + 1)
    }
}
