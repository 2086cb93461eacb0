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
    static let source = OperandSpec("SOURCE", completion: .file, help: "PATH | - (stdin) | synthetic:SIZE[:SEED]")
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
    static let header = OptionSpec("-H", "--header", value: "'Name: value'", help: "repeatable")
    static let cacert = OptionSpec("--cacert", value: "FILE", completion: .file, help: "extra trusted CAs (PEM)")
    static let insecure = OptionSpec("-k", "--insecure", help: "skip TLS verification")
}
