import Sluice

/// A usage error: printed as one line, exit status 2.
package struct UsageError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }

    /// An option a command's specification lists that its handler does not take: a mistake in
    /// the command's code, said as one line (an e2e test gives every command each of its options).
    static func unhandled(_ name: String) -> UsageError {
        UsageError("option \(name) is in the command's description but not handled")
    }
}

/// `-h` or `--help` among a command's options (not after `--`, not as an option's value).
struct HelpRequested: Error {}

/// One `sluice` command: a type that parses its arguments, then runs.
protocol Subcommand {
    /// Every form of the command, as the parser accepts it and as `--help`, the man page and
    /// the completions show it (`CommandSpec`): more than one for a group (`s3`) or for a
    /// command with two forms (`upload`, `upload --parts`).
    static var specifications: [CommandSpec] { get }
    /// Parses the arguments after the command's name.
    ///
    /// - Throws: `HelpRequested` for `-h`/`--help`; anything else is a usage error (exit 2).
    init(arguments: [String]) throws
    /// Does the work.
    ///
    /// - Returns: The exit status; a thrown error is one line and exit 1 (2 for `UsageError`).
    func run() async throws -> Int32
}

/// A small curl-style argument scanner: options may come before or after positionals,
/// `--name value` or `--name=value`, `-X value` or `-Xvalue`, `--` ends options.
struct Arguments {
    private var items: [String]
    private(set) var positionals: [String] = []
    /// The options given, by their name (`OptionSpec.name`): what a profile's setting must not
    /// override (`--part-size` over `multipart_chunksize`).
    private(set) var given: Set<String> = []

    init(_ items: [String]) { self.items = items }

    /// Scans `items` for the options `command` takes, calling `handle` with each one's name
    /// (its last spelling, `--method` for `-X`) and its value ("" for a flag).
    ///
    /// - Throws: `HelpRequested` for `-h`/`--help`; `UsageError` for an option `command` does
    ///   not take, a missing value, a value given to a flag; whatever `handle` throws.
    mutating func scan(_ command: CommandSpec, handle: (_ name: String, _ value: String) throws -> Void) throws {
        var index = 0
        var onlyPositionals = false
        while index < items.count {
            let item = items[index]
            index += 1
            if onlyPositionals || item == "-" || !item.hasPrefix("-") {
                positionals.append(item)
                continue
            }
            if item == "--" {
                onlyPositionals = true
                continue
            }
            if item == "-h" || item == "--help" { throw HelpRequested() }
            var name = item
            var value: String?
            if item.hasPrefix("--"), let equals = item.firstIndex(of: "=") {
                name = String(item[..<equals])
                value = String(item[item.index(after: equals)...])
            } else if !item.hasPrefix("--"), item.count > 2 {
                name = String(item.prefix(2))
                value = String(item.dropFirst(2))
            }
            guard let option = command.option(spelled: name) else {
                let spellings = command.acceptedOptions.flatMap(\.names).filter { $0.hasPrefix("--") == name.hasPrefix("--") }
                throw UsageError("unknown option \(item)\(Suggestion.hint(for: name, among: spellings))")
            }
            if option.takesValue {
                if value == nil {
                    guard index < items.count else { throw UsageError("option \(name) needs a value") }
                    value = items[index]
                    index += 1
                }
            } else {
                guard value == nil else { throw UsageError("option \(name) takes no value") }
            }
            given.insert(option.name)
            try handle(option.name, value ?? "")
        }
    }
}

extension Arguments {
    /// Scans for the options `command` takes, applying each to `settings` as its declaration in
    /// `options` says (the options `command`'s specification was made from).
    ///
    /// - Throws: as `scan(_:handle:)`, and whatever an option's `apply` throws.
    mutating func scan<Settings>(_ command: CommandSpec, _ options: [Option<Settings>], into settings: inout Settings) throws {
        try scan(command) { name, value in
            guard let option = options.first(where: { $0.spec.name == name }) else { throw UsageError.unhandled(name) }
            try option.apply(&settings, value)
        }
    }

    /// Scans `arguments` of a command that takes options only (`demo`, `receive`) into
    /// `settings`.
    ///
    /// - Throws: as `scan(_:_:into:)`; `UsageError` for an operand.
    static func scanOptionsOnly<Settings>(
        _ arguments: [String], _ command: CommandSpec, _ options: [Option<Settings>], into settings: inout Settings
    ) throws {
        var scanner = Arguments(arguments)
        try scanner.scan(command, options, into: &settings)
        guard scanner.positionals.isEmpty else {
            throw UsageError("\(command.path.joined(separator: " ")) takes no arguments, got '\(scanner.positionals[0])'")
        }
    }

    /// Parses a timeout in seconds: a finite number more than 0 and at most
    /// `UploadOptions.maximumTimeout` (inf, nan, 1e300 and negatives are usage errors).
    static func seconds(_ value: String, option: String) throws -> Duration {
        let limit = UploadOptions.maximumTimeout / .seconds(1)
        guard let seconds = Double(value), seconds.isFinite, seconds > 0, seconds <= limit else {
            throw UsageError("\(option) needs a number of seconds, more than 0 and at most \(Int(limit)), got '\(value)'")
        }
        return .seconds(seconds)
    }

    /// Parses `--stall-timeout` into `options`: one bound for the connect, the answer and the
    /// source alike (a stall is one failed attempt, retried as the command retries).
    static func stallTimeout(_ value: String, into options: inout UploadOptions) throws {
        let timeout = try seconds(value, option: "--stall-timeout")
        options.stallTimeout = timeout
        options.connectTimeout = timeout
    }

    /// Parses `--limit-rate` into `options`: one `RateLimit` that every request draws from.
    static func limitRate(_ value: String, into options: inout UploadOptions) throws {
        let rate: Int64
        do { rate = try ByteCount.parse(value) } catch {
            throw UsageError("--limit-rate needs a rate such as 500K or 10M (bytes per second), got '\(value)'")
        }
        do {
            options.rateLimit = try RateLimit(bytesPerSecond: rate)
        } catch {
            throw UsageError("--limit-rate must be from 1 byte to 1TiB per second, got '\(value)'")
        }
    }

    /// Parses a whole count in `range`.
    static func count(_ value: String, option: String, in range: ClosedRange<Int>) throws -> Int {
        guard let count = Int(value), range.contains(count) else {
            throw UsageError("\(option) needs a whole number from \(range.lowerBound) to \(range.upperBound), got '\(value)'")
        }
        return count
    }

    /// Parses `--transport curl|urlsession`.
    static func transport(_ value: String) throws -> TransportKind {
        guard let kind = TransportKind(rawValue: value) else {
            throw UsageError("unknown transport '\(value)': use curl or urlsession")
        }
        return kind
    }

    /// Parses `--progress auto|bar|json|none`.
    static func progressStyle(_ value: String) throws -> ProgressPrinter.Style {
        guard let style = ProgressPrinter.Style(rawValue: value) else {
            throw UsageError("unknown progress style '\(value)': use auto, bar, json or none")
        }
        return style
    }

    /// Parses `Name: value` as given to `-H` (and in a form part's `headers=`), checked as
    /// a transport would check it.
    ///
    /// - Throws: `UploadError.invalidHeader` when there is no colon or the header cannot be sent.
    static func header(_ line: String) throws -> HTTPHeader {
        guard let colon = line.firstIndex(of: ":") else {
            throw UploadError.invalidHeader("header '\(line)' has no ':' (expected 'Name: value')")
        }
        let header = HTTPHeader(name: String(line[..<colon]), value: String(line[line.index(after: colon)...]))
        try header.validate()
        return header
    }

    /// Parses `-u USER:PASS`.
    static func credentials(_ text: String) throws -> UploadOptions.Credentials {
        guard let colon = text.firstIndex(of: ":") else { throw UsageError("--user needs USER:PASS") }
        return UploadOptions.Credentials(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// Parses `--metadata key=value`: the key must be non-empty ASCII without spaces or
    /// commas (tus separates pairs with commas and key from value with a space).
    static func metadata(_ text: String) throws -> (key: String, value: String) {
        guard let equals = text.firstIndex(of: "=") else {
            throw UsageError("metadata '\(text)' has no '=' (expected key=value)")
        }
        let key = String(text[..<equals])
        guard TusOptions.isValidMetadataKey(key) else {
            throw UsageError("metadata key '\(key)' must be non-empty ASCII without spaces or commas")
        }
        return (key, String(text[text.index(after: equals)...]))
    }
}
