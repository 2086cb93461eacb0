import Sluice

/// A usage error: printed as one line, exit status 2.
package struct UsageError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// `-h` or `--help` among a command's options (not after `--`, not as an option's value).
struct HelpRequested: Error {}

/// One `sluice` subcommand: a type that parses its arguments, then runs.
protocol Subcommand {
    /// What `sluice COMMAND --help` prints: the synopsis and every option.
    static var usage: String { get }
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

    init(_ items: [String]) { self.items = items }

    /// Scans `items`, calling `handle` with each option name and a way to take its value.
    ///
    /// - Parameter valued: option names that take a value (e.g. `["-X", "--method"]`).
    mutating func scan(valued: Set<String>, flags: Set<String>, handle: (String, String?) throws -> Void) throws {
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
            if valued.contains(name) {
                if value == nil {
                    guard index < items.count else { throw UsageError("option \(name) needs a value") }
                    value = items[index]
                    index += 1
                }
                try handle(name, value)
            } else if flags.contains(name) {
                guard value == nil else { throw UsageError("option \(name) takes no value") }
                try handle(name, nil)
            } else {
                throw UsageError("unknown option \(item)")
            }
        }
    }
}

extension Arguments {
    /// Parses a timeout in seconds: a finite number more than 0 and at most
    /// `UploadOptions.maximumTimeout` (inf, nan, 1e300 and negatives are usage errors).
    static func seconds(_ value: String, option: String) throws -> Duration {
        let limit = UploadOptions.maximumTimeout / .seconds(1)
        guard let seconds = Double(value), seconds.isFinite, seconds > 0, seconds <= limit else {
            throw UsageError("\(option) needs a number of seconds, more than 0 and at most \(Int(limit)), got '\(value)'")
        }
        return .seconds(seconds)
    }

    /// `--stall-timeout SECONDS`, which every command that talks to a server takes.
    static let stallTimeoutUsage = """
      --stall-timeout SECONDS    fail an attempt when the connection, the server's answer or the
                                 source is silent this long (default 60, at most 31536000)
    """

    /// Parses `--stall-timeout` into `options`: one bound for the connect, the answer and the
    /// source alike (a stall is one failed attempt, retried as the command retries).
    static func stallTimeout(_ value: String, into options: inout UploadOptions) throws {
        let timeout = try seconds(value, option: "--stall-timeout")
        options.stallTimeout = timeout
        options.connectTimeout = timeout
    }

    /// `--limit-rate RATE`, which every command that sends a body takes.
    static let limitRateUsage = """
      --limit-rate RATE          at most RATE bytes per second across every connection (curl's
                                 name; 500K, 10M, 1G are binary, as curl reads them)
    """

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
