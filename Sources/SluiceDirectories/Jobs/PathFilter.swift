/// `--include` and `--exclude` with the AWS CLI's rules: every file starts included; the rules
/// are tried in order and the last one whose pattern matches decides. A pattern is a
/// `GlobPattern` (`*` crosses `/`) matched against the file's path below the walk's root
/// (`*.jpg` matches `a.jpg` and `photos/2024/b.jpg`); a pattern that starts with `/` is
/// matched against the file's absolute path.
///
/// The AWS CLI joins the root directory and the pattern into one pattern, so a root whose name
/// holds `*`, `?` or `[` matches differently there; here the root is always literal.
///
/// With a `shard` (`--shard K/N`), a path the rules take is taken only when it falls in that
/// shard: a job's files and, for `s3 sync --delete`, the objects it may delete.
public struct PathFilter: Sendable, Equatable {
    /// One rule: what a match decides.
    public enum Rule: Sendable, Equatable {
        /// A path that matches is sent (unless a later rule excludes it).
        case include(GlobPattern)
        /// A path that matches is not sent (unless a later rule includes it).
        case exclude(GlobPattern)
    }

    /// The rules, in the order given (later rules win).
    public var rules: [Rule]
    /// Only the paths that fall in this shard; nil for every path.
    public var shard: KeyShard?

    /// A filter with `rules` (none: every file), in `shard` (nil: all of them).
    public init(_ rules: [Rule] = [], shard: KeyShard? = nil) {
        self.rules = rules
        self.shard = shard
    }

    /// Whether the file at `relativePath` (`/`-separated, below `root`) is taken.
    ///
    /// - Parameters:
    ///   - relativePath: The path below the root, as in `WalkedFile.relativePath`.
    ///   - root: The root's absolute path, for patterns that start with `/`.
    public func includes(_ relativePath: String, root: String) -> Bool {
        var included = true
        var absolute: String?
        for rule in rules {
            let (pattern, verdict): (GlobPattern, Bool)
            switch rule {
            case .include(let p): (pattern, verdict) = (p, true)
            case .exclude(let p): (pattern, verdict) = (p, false)
            }
            let subject: String
            if pattern.description.hasPrefix("/") {
                if absolute == nil { absolute = root.hasSuffix("/") ? root + relativePath : root + "/" + relativePath }
                subject = absolute!
            } else {
                subject = relativePath
            }
            if pattern.matches(subject) { included = verdict }
        }
        guard included, let shard else { return included }
        return shard.contains(relativePath)
    }
}
