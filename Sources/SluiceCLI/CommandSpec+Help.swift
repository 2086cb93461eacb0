/// The whole command line, as `CommandSpec` values: what the parser accepts, and where
/// `--help`, the man page and the completions are made from.
enum CommandLineDescription {
    /// `sluice` itself, then every form of every command, in `Commands.all`'s order.
    static var commands: [CommandSpec] { [root] + Commands.all.flatMap { $0.specifications } }

    /// The forms whose path is `path` exactly (two for `upload`, one for most).
    static func forms(of path: [String]) -> [CommandSpec] {
        commands.filter { $0.path == path }
    }

    /// The forms below `path` (`s3 cp`, `s3 abort` … for `["s3"]`; every command for `[]`).
    static func descendants(of path: [String]) -> [CommandSpec] {
        commands.filter { $0.path.count > path.count && $0.path.starts(with: path) }
    }

    /// Every path that names a command or a group of commands (`[]`, `["s3"]`, `["s3", "cp"]` …).
    static var paths: [[String]] {
        var paths: [[String]] = []
        for command in commands where !paths.contains(command.path) { paths.append(command.path) }
        return paths
    }

    /// What `sluice WORDS… --help` prints: a command's forms, or for a group (`sluice`,
    /// `sluice s3`) its usage line, the commands below it, its options and text.
    ///
    /// - Returns: nil when no command has that path.
    static func help(for path: [String]) -> String? {
        let forms = forms(of: path)
        guard let first = forms.first else { return nil }
        let below = descendants(of: path)
        guard !below.isEmpty else { return forms.map(\.usage).joined(separator: "\n") }
        var lines = first.usageLines
        lines += HelpText.rows(
            below.flatMap { command in
                command.synopses.compactMap { synopsis in
                    synopsis.summary.map { ((command.path.dropFirst(path.count) + [synopsis.arguments]).joined(separator: " "), $0) }
                }
            },
            column: HelpText.commandColumn)
        lines += HelpText.rows(first.rows.map { ($0.left, $0.help) }, column: HelpText.commandColumn)
        lines += HelpText.lines(first.about, indent: "")
        lines += HelpText.lines(first.notes, indent: "")
        return lines.joined(separator: "\n")
    }
}

extension CommandSpec {
    /// `usage: sluice PATH SYNOPSIS`, one line per synopsis.
    var usageLines: [String] {
        synopses.enumerated().map { index, synopsis in
            (index == 0 ? "usage: " : "       ") + (["sluice"] + path + [synopsis.arguments]).joined(separator: " ")
        }
    }

    /// The rows `--help` and the man page list: operands with help, every accepted option,
    /// and `--` when the command has operands.
    var rows: [HelpRow] {
        var rows = operands.filter { !$0.help.isEmpty }.map { HelpRow(names: [$0.name], isOperand: true, help: $0.help) }
        rows += acceptedOptions.map { HelpRow(names: $0.names, value: $0.value, help: $0.help) }
        if !operands.isEmpty {
            let names = operands.map(\.name).joined(separator: " or ")
            rows.append(HelpRow(names: ["--"], help: "everything after it is \(names), even if it starts with -"))
        }
        return rows
    }

    /// This form's `--help`: usage lines, the text about it, its operands and options, notes.
    var usage: String {
        var lines = usageLines
        lines += HelpText.lines(about, indent: "  ")
        lines += HelpText.rows(rows.map { ($0.left, $0.help) }, column: HelpText.optionColumn)
        lines += HelpText.lines(notes, indent: "")
        return lines.joined(separator: "\n")
    }
}

/// One row of a command's options in `--help` and the man page: an operand, an option, `--`.
struct HelpRow {
    var names: [String]
    var value: String?
    var isOperand = false
    var help: String

    /// `-X, --method METHOD`, `SOURCE`: the row's left column in `--help`.
    var left: String { names.joined(separator: ", ") + (value.map { " " + $0 } ?? "") }
}

/// The layout of `--help`.
enum HelpText {
    /// Where an option's help starts.
    static let optionColumn = 29
    /// Where a command's summary starts in a list of commands.
    static let commandColumn = 35

    /// `text`'s lines, each after `indent`; none for empty text.
    static func lines(_ text: String, indent: String) -> [String] {
        text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map { indent + $0 }
    }

    /// Two columns: `left` after two spaces, its help from `column` on (on the next line when
    /// `left` reaches it), each further line of help at `column`.
    static func rows(_ rows: [(left: String, help: String)], column: Int) -> [String] {
        let margin = String(repeating: " ", count: column)
        var lines: [String] = []
        for (left, help) in rows {
            let head = "  " + left
            var helpLines = help.isEmpty ? [] : help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if !helpLines.isEmpty, head.count < column {
                lines.append(head.padding(toLength: column) + helpLines.removeFirst())
            } else {
                lines.append(head)
            }
            lines += helpLines.map { margin + $0 }
        }
        return lines
    }
}

extension String {
    /// The string with spaces added up to `length` characters.
    fileprivate func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }
}
