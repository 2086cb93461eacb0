import Foundation

extension CommandLineDescription {
    /// The manual page, `sluice.1` (roff, `man -l sluice.1`): every command's usage lines,
    /// text, operands and options, made from the same `CommandSpec` values as `--help`.
    static func manual() -> String {
        var page = [
            #".\" sluice.1, made by `sluice help --man` from the command line's description"#,
            #".\" (Sources/SluiceCLI, CommandSpec): edit that, not this file."#,
            #".TH SLUICE 1 "" "sluice \#(sluiceVersion)" "User Commands""#,
            ".nh",
            ".ad l",
            ".SH NAME",
            #"sluice \- uploads data too large for memory: HTTP, forms, tus, S3 multipart"#,
            ".SH SYNOPSIS",
            ".nf",
        ]
        let commands = commands.filter { !$0.path.isEmpty }
        for command in commands where descendants(of: command.path).isEmpty {
            page += command.synopses.map { Manual.synopsis(command, $0) }
        }
        page += [".fi", ".SH DESCRIPTION"]
        page += Manual.paragraph(root.about)
        page += Manual.paragraph(root.notes)
        page += [".SH OPTIONS"]
        page += Manual.rows(root.rows)
        page += [".SH COMMANDS"]
        for command in commands {
            page += [".SS \"\(Manual.escape(command.title))\"", ".nf"]
            page += command.synopses.map { Manual.synopsis(command, $0) }
            page += [".fi"]
            page += Manual.paragraph(command.about)
            page += Manual.rows(command.rows)
            page += Manual.paragraph(command.notes)
        }
        page += [".SH EXIT STATUS"]
        page += exitStatuses.flatMap { [".TP", "\\fB\($0.status)\\fR", Manual.escape($0.meaning)] }
        page += [".SH ENVIRONMENT"]
        page += environment.flatMap { [".TP", "\\fB\(Manual.escape($0.name))\\fR", Manual.escape($0.meaning)] }
        page += [".SH FILES"]
        page += files.flatMap { [".TP", "\\fI\(Manual.escape($0.path))\\fR", Manual.escape($0.meaning)] }
        page += [".SH EXAMPLES"]
        page += examples.flatMap { [".TP", "\\fB\(Manual.escape($0.command))\\fR", Manual.escape($0.meaning)] }
        page += [".SH SEE ALSO", #"\fBcurl\fR(1), \fBaws\fR(1)"#]
        return page.joined(separator: "\n")
    }
}

/// roff for the manual page.
enum Manual {
    /// `text` as roff text: backslashes and minus signs escaped, anything not ASCII as
    /// `\[uXXXX]` (groff warns of it otherwise), a line that would start a request (`.` or
    /// `'`) protected.
    static func escape(_ text: some StringProtocol) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\e"
            case "-": escaped += "\\-"
            case _ where !scalar.isASCII: escaped += "\\[u" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4) + "]"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }

    /// `sluice s3 cp` in bold, then the synopsis's arguments.
    static func synopsis(_ command: CommandSpec, _ synopsis: Synopsis) -> String {
        "\\fB\(escape((["sluice"] + command.path).joined(separator: " ")))\\fR \(escape(synopsis.arguments))"
    }

    /// A paragraph of `text` (roff fills it); none for empty text.
    static func paragraph(_ text: String) -> [String] {
        text.isEmpty ? [] : [".PP"] + text.split(separator: "\n").map { escape($0) }
    }

    /// A tagged paragraph per row: an option's names in bold, its value's placeholder and an
    /// operand in italics.
    static func rows(_ rows: [HelpRow]) -> [String] {
        rows.flatMap { row in
            let tag =
                row.isOperand
                ? "\\fI\(escape(row.left))\\fR"
                : row.names.map { "\\fB\(escape($0))\\fR" }.joined(separator: ", ") + (row.value.map { " \\fI\(escape($0))\\fR" } ?? "")
            return [".TP", tag] + (row.help.isEmpty ? [] : row.help.split(separator: "\n").map { escape($0) })
        }
    }
}

extension String {
    /// The string after enough zeros to make it `length` characters.
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
