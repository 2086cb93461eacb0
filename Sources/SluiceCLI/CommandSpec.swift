import Sluice

/// One option of a command, as the parser accepts it and as `--help`, the man page and the
/// shell completions show it: all four are made from this value (`CommandSpec+Help`,
/// `+Manual`, `+Completions`), so they cannot drift apart.
struct OptionSpec: Sendable, Hashable {
    /// What a shell offers for the option's value.
    enum Completion: Sendable, Hashable {
        case none
        case file
        case directory
        case choices([String])
        /// The name of a command (`sluice help COMMAND`).
        case commands
    }

    /// Every spelling, short first (`["-X", "--method"]`); the last is the option's name,
    /// which the command's handler is given whichever spelling was typed.
    let names: [String]
    /// The value's placeholder (`METHOD`, `curl|urlsession`); nil for a flag.
    let value: String?
    let completion: Completion
    /// What it does. A line break here is a line break in `--help`; the man page fills.
    let help: String

    /// - Parameters:
    ///   - names: Every spelling, short first.
    ///   - value: The value's placeholder; nil for a flag.
    ///   - completion: What a shell offers for the value (`.file` and `.directory` are what
    ///     a path takes; the default offers nothing).
    ///   - help: What the option does.
    init(_ names: String..., value: String? = nil, completion: Completion = .none, help: String) {
        self.init(names: names, value: value, completion: completion, help: help)
    }

    private init(names: [String], value: String?, completion: Completion, help: String) {
        precondition(!names.isEmpty && names.allSatisfy { $0.hasPrefix("-") }, "an option is spelled -x or --name")
        self.names = names
        self.value = value
        self.completion = completion
        self.help = help
    }

    /// An option whose value is one of `choices`, shown as `a|b|c` and completed from them.
    static func choice(_ names: String..., among choices: [String], help: String) -> OptionSpec {
        OptionSpec(names: names, value: choices.joined(separator: "|"), completion: .choices(choices), help: help)
    }

    /// The name the handler is given: the last spelling (`--method` for `-X`).
    var name: String { names[names.count - 1] }

    var takesValue: Bool { value != nil }

    /// `-X, --method METHOD`: as `--help` and the man page show it.
    var spelled: String { names.joined(separator: ", ") + (value.map { " " + $0 } ?? "") }

    /// The same option with other help (`--retries` means something else to each command).
    func with(help: String) -> OptionSpec {
        OptionSpec(names: names, value: value, completion: completion, help: help)
    }
}

/// An operand (positional argument) of a command: `SOURCE`, `URL`, `s3://BUCKET/KEY`.
struct OperandSpec: Sendable, Hashable {
    let name: String
    /// Shown as a row before the options when not empty.
    let help: String
    let completion: OptionSpec.Completion

    init(_ name: String, completion: OptionSpec.Completion = .none, help: String = "") {
        self.name = name
        self.completion = completion
        self.help = help
    }

    /// `SOURCE` of `upload`, `checksum`, `s3 cp`: the three kinds `SourceSpecification` parses.
    static let source = OperandSpec("SOURCE", completion: .file, help: "PATH | - (stdin) | synthetic:SIZE[:SEED] | http(s)://URL | s3://BUCKET/KEY (s3 cp)")
}

/// One usage line of a command: what follows `sluice COMMAND`, and, for the list of
/// commands (`sluice --help`, the man page), what it does.
struct Synopsis: Sendable, Hashable {
    let arguments: String
    let summary: String?

    init(_ arguments: String, _ summary: String? = nil) {
        self.arguments = arguments
        self.summary = summary
    }
}

/// One form of one `sluice` command: everything the parser accepts and every word of its
/// help, in one value. `CommandLineDescription.commands` lists them all.
///
/// A command with two forms (`upload` and `upload --parts`, `s3 presign` and
/// `s3 presign --multipart`) has two values with the same `path`: the second names the
/// option that selects it (`selector`), and `--help` shows both.
struct CommandSpec: Sendable {
    /// The words after `sluice` (`["s3", "cp"]`); empty for `sluice` itself.
    let path: [String]
    /// The option that selects this form of the command (`--parts`), if it is one of two.
    var selector: String?
    let synopses: [Synopsis]
    /// Text between the usage lines and the options (a line break is kept in `--help`).
    var about = ""
    var operands: [OperandSpec] = []
    var options: [OptionSpec] = []
    /// Text after the options (a line break is kept in `--help`).
    var notes = ""

    /// `sluice s3 cp`, `sluice upload --parts`: the path and the selector.
    var title: String { (["sluice"] + path + (selector.map { [$0] } ?? [])).joined(separator: " ") }

    /// Every option the parser accepts: the command's own, then `-h, --help`.
    var acceptedOptions: [OptionSpec] { options + [.help] }

    /// The option spelled `name` (any of its spellings), if the command takes it.
    func option(spelled name: String) -> OptionSpec? {
        acceptedOptions.first { $0.names.contains(name) }
    }
}

extension OptionSpec {
    /// `-h, --help`, which every command takes (the scanner answers it).
    static let help = OptionSpec("-h", "--help", help: "this text")
    /// `--stall-timeout SECONDS`, which every command that talks to a server takes.
    static let stallTimeout = OptionSpec(
        "--stall-timeout", value: "SECONDS",
        help: """
            fail an attempt when the connection, the server's answer or the
            source is silent this long (default 60, at most 31536000); an
            answer must also come at \(AnswerPace.minimumBytesPerSecond) bytes/s or faster over every
            SECONDS and end within \(AnswerPace.stallTimeoutsPerAnswer) x SECONDS of the request's last
            byte (as curl's speed limit, speed time and max time)
            """)
    /// `--limit-rate RATE`, which every command that sends a body takes.
    static let limitRate = OptionSpec(
        "--limit-rate", value: "RATE",
        help: """
            at most RATE bytes per second across every connection (curl's
            name; 500K, 10M, 1G are binary, as curl reads them)
            """)
    static let transport = OptionSpec.choice("--transport", among: ["curl", "urlsession"], help: "")
    static let progress = OptionSpec.choice("--progress", among: ["auto", "bar", "json", "none"], help: "")
    static let noProgress = OptionSpec("--no-progress", help: "no progress display: --progress none (the AWS CLI's flag)")
    static let header = OptionSpec("-H", "--header", value: "'Name: value'", help: "repeatable")
    static let cacert = OptionSpec("--cacert", value: "FILE", completion: .file, help: "extra trusted CAs (PEM)")
    static let insecure = OptionSpec("-k", "--insecure", help: "skip TLS verification")
    static let sourceHeader = OptionSpec(
        "--source-header", value: "'Name: value'",
        help: """
            sent with each request for an http(s) SOURCE (a token), only to
            its origin, never after a redirect elsewhere; repeatable
            """)
}

/// An option and what it does to the settings of the command that takes it: the one
/// declaration that `--help`, the man page and the completions show (`spec`) and that the
/// parser applies (`apply`), as swift-argument-parser's property wrappers are. A command lists
/// its `Option`s once; its `CommandSpec` is made from their specs, so no option can be shown
/// and not applied, or applied and not shown.
struct Option<Settings> {
    let spec: OptionSpec
    /// Sets what the option says in the settings; `value` is "" for a flag.
    let apply: (_ settings: inout Settings, _ value: String) throws -> Void

    init(_ spec: OptionSpec, _ apply: @escaping (_ settings: inout Settings, _ value: String) throws -> Void) {
        self.spec = spec
        self.apply = apply
    }

    /// This option applied to the part of wider settings at `path` (the options every `s3`
    /// command takes, inside one command's settings).
    func within<Outer>(_ path: WritableKeyPath<Outer, Settings>) -> Option<Outer> {
        let apply = self.apply
        return Option<Outer>(spec) { outer, value in try apply(&outer[keyPath: path], value) }
    }

    /// The same option with other help.
    func with(help: String) -> Option {
        Option(spec.with(help: help), apply)
    }
}

extension Array {
    /// These options applied to the part of wider settings at `path`.
    func within<Settings, Outer>(_ path: WritableKeyPath<Outer, Settings>) -> [Option<Outer>] where Element == Option<Settings> {
        map { $0.within(path) }
    }
}

extension Option {
    /// `--stall-timeout` into the request options at `path`.
    static func stallTimeout(_ path: WritableKeyPath<Settings, UploadOptions>) -> Option {
        Option(.stallTimeout) { try Arguments.stallTimeout($1, into: &$0[keyPath: path]) }
    }
    /// `--limit-rate` into the request options at `path`.
    static func limitRate(_ path: WritableKeyPath<Settings, UploadOptions>) -> Option {
        Option(.limitRate) { try Arguments.limitRate($1, into: &$0[keyPath: path]) }
    }
    /// `--cacert` into the request options at `path`.
    static func cacert(_ path: WritableKeyPath<Settings, UploadOptions>) -> Option {
        Option(.cacert) { $0[keyPath: path].caFile = $1 }
    }
    /// `-k, --insecure` into the request options at `path`.
    static func insecure(_ path: WritableKeyPath<Settings, UploadOptions>) -> Option {
        Option(.insecure) { settings, _ in settings[keyPath: path].insecure = true }
    }
    /// `--transport` into `path`.
    static func transport(_ path: WritableKeyPath<Settings, TransportKind>) -> Option {
        Option(.transport) { $0[keyPath: path] = try Arguments.transport($1) }
    }
    /// `--progress` into `path`.
    static func progress(_ path: WritableKeyPath<Settings, ProgressPrinter.Style>) -> Option {
        Option(.progress) { $0[keyPath: path] = try Arguments.progressStyle($1) }
    }
    /// `--no-progress` (the AWS CLI's spelling of `--progress none`) into `path`.
    static func noProgress(_ path: WritableKeyPath<Settings, ProgressPrinter.Style>) -> Option {
        Option(.noProgress) { settings, _ in settings[keyPath: path] = .none }
    }
    /// `-H, --header`, appended to the headers at `path`.
    static func header(_ path: WritableKeyPath<Settings, [HTTPHeader]>) -> Option {
        Option(.header) { $0[keyPath: path].append(try Arguments.header($1)) }
    }
    /// `--source-header` into the remote source's options at `path`; its value is kept out of
    /// every message.
    static func sourceHeader(_ path: WritableKeyPath<Settings, RemoteSourceOptions>) -> Option {
        Option(.sourceHeader) {
            let header: HTTPHeader
            do { header = try Arguments.header($1) } catch { throw UsageError("--source-header: \(error)") }
            Redaction.register(header.value)
            $0[keyPath: path].headers.append(header)
        }
    }
}
