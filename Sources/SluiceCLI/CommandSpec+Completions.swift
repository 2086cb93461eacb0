import Foundation

/// A shell `sluice completions` writes a script for.
enum CompletionShell: String, CaseIterable, Sendable {
    case bash, zsh, fish
}

/// What a shell offers at one command (`sluice`, `sluice s3`, `sluice s3 cp`): made from every
/// form with that path, so `upload` offers the options of `upload` and of `upload --parts`.
struct CompletionNode {
    /// `sluice s3 cp`: the words a shell sees.
    let words: String
    /// The commands one word below (`cp`, `abort` … for `sluice s3`), with their summaries.
    let subcommands: [(name: String, summary: String)]
    /// Every option any form takes, each once.
    let options: [OptionSpec]
    /// What an operand completes to: the first operand's that is not `.none`.
    let operands: OptionSpec.Completion

    init(path: [String]) {
        words = (["sluice"] + path).joined(separator: " ")
        var subcommands: [(name: String, summary: String)] = []
        for command in CommandLineDescription.descendants(of: path) where command.path.count == path.count + 1 {
            let name = command.path[path.count]
            guard !subcommands.contains(where: { $0.name == name }) else { continue }
            subcommands.append((name, command.synopses.compactMap(\.summary).first ?? ""))
        }
        self.subcommands = subcommands
        var options: [OptionSpec] = []
        let forms = CommandLineDescription.forms(of: path)
        for option in forms.flatMap(\.acceptedOptions) where !options.contains(where: { $0.names == option.names }) {
            options.append(option)
        }
        self.options = options
        operands = forms.flatMap(\.operands).map(\.completion).first { $0 != .none } ?? .none
    }

    /// Every node, `sluice` first.
    static var all: [CompletionNode] { CommandLineDescription.paths.map(CompletionNode.init(path:)) }

    /// The words `completion` offers (`.choices`, `.commands`); empty for the others.
    static func words(of completion: OptionSpec.Completion) -> [String] {
        switch completion {
        case .choices(let words): return words
        case .commands: return CommandLineDescription.paths.compactMap { $0.count == 1 ? $0[0] : nil }
        case .none, .file, .directory: return []
        }
    }
}

extension CommandLineDescription {
    /// The completion script for `shell`: `sluice completions SHELL`.
    static func completions(for shell: CompletionShell) -> String {
        let nodes = CompletionNode.all
        switch shell {
        case .bash: return Completions.bash(nodes)
        case .zsh: return Completions.zsh(nodes)
        case .fish: return Completions.fish(nodes)
        }
    }
}

/// The three scripts. Each finds the command the words typed so far name (the longest run of
/// words after `sluice` that is a command), then offers the value of the option before the
/// cursor, else the options (for a word starting with `-`), the subcommands or the operands.
enum Completions {
    static func header(_ shell: CompletionShell) -> String {
        "# \(shell.rawValue) completion for sluice, made by `sluice completions \(shell.rawValue)` from the command line's description."
    }

    /// `'a'|'b'`: every command's words, as a `case` pattern.
    static func commandPattern(_ nodes: [CompletionNode], separator: String) -> String {
        nodes.dropFirst().map { "'\($0.words)'" }.joined(separator: separator)
    }

    static func bash(_ nodes: [CompletionNode]) -> String {
        func offer(_ completion: OptionSpec.Completion, _: String) -> String {
            switch completion {
            case .none: return "COMPREPLY=()"
            case .file: return #"COMPREPLY=($(compgen -f -- "$cur"))"#
            case .directory: return #"COMPREPLY=($(compgen -d -- "$cur"))"#
            case .choices, .commands:
                return #"COMPREPLY=($(compgen -W '\#(CompletionNode.words(of: completion).joined(separator: " "))' -- "$cur"))"#
            }
        }
        let lines =
            [header(.bash)]
            + function(nodes, words: "COMP_WORDS", first: 1, current: "COMP_CWORD", offer: offer)
            + ["complete -o filenames -F _sluice sluice"]
        return lines.joined(separator: "\n")
    }

    static func zsh(_ nodes: [CompletionNode]) -> String {
        func offer(_ completion: OptionSpec.Completion, _ value: String) -> String {
            switch completion {
            case .none: return "_message -r '\(value.replacingOccurrences(of: "'", with: ""))'"
            case .file: return "_files"
            case .directory: return "_files -/"
            case .choices, .commands: return "compadd -- " + CompletionNode.words(of: completion).map { "'\($0)'" }.joined(separator: " ")
            }
        }
        let lines =
            ["#compdef sluice", header(.zsh)]
            + function(nodes, words: "words", first: 2, current: "CURRENT", offer: offer)
            + [#"if [[ $funcstack[1] == _sluice ]]; then _sluice "$@"; else compdef _sluice sluice; fi"#]
        return lines.joined(separator: "\n")
    }

    /// `_sluice`, in the shell syntax bash and zsh share: finds the command in `words` (from
    /// index `first` to the cursor, `current`), then offers the value of the option before the
    /// cursor, else the options (a word starting with `-`), the subcommands or the operands.
    ///
    /// - Parameter offer: The shell's command that offers a completion (`compgen`, `compadd`),
    ///   given the value's placeholder.
    static func function(
        _ nodes: [CompletionNode], words: String, first: Int, current: String,
        offer: (OptionSpec.Completion, String) -> String
    ) -> [String] {
        var lines = [
            "_sluice() {",
            #"    local cur=${\#(words)[\#(current)]} prev=${\#(words)[\#(current)-1]} at=sluice i"#,
            "    for ((i = \(first); i < \(current); i++)); do",
            #"        case "$at ${\#(words)[i]}" in"#,
            #"            \#(commandPattern(nodes, separator: "|"))) at+=" ${\#(words)[i]}" ;;"#,
            "            *) break ;;",
            "        esac",
            "    done",
            #"    case "$at $prev" in"#,
        ]
        for node in nodes {
            for option in node.options where option.takesValue {
                let pattern = option.names.map { "'\(node.words) \($0)'" }.joined(separator: "|")
                lines.append("        \(pattern)) \(offer(option.completion, option.value ?? "")); return ;;")
            }
        }
        lines += ["    esac", #"    case "$at" in"#]
        for node in nodes {
            let rest = offer(node.subcommands.isEmpty ? node.operands : .choices(node.subcommands.map(\.name)), "")
            let options = offer(.choices(node.options.flatMap(\.names)), "")
            lines.append(#"        '\#(node.words)') if [[ $cur == -* ]]; then \#(options); else \#(rest); fi ;;"#)
        }
        return lines + ["    esac", "}"]
    }

    static func fish(_ nodes: [CompletionNode]) -> String {
        /// `text` in single quotes, as fish reads them.
        func quoted(_ text: String) -> String {
            "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        }
        func offer(_ completion: OptionSpec.Completion) -> String {
            switch completion {
            case .none: return "-x"
            case .file: return "-r -F"
            case .directory: return "-x -a '(__fish_complete_directories)'"
            case .choices, .commands: return "-x -a " + quoted(CompletionNode.words(of: completion).joined(separator: " "))
            }
        }
        var lines = [
            header(.fish),
            "function __sluice_at --description 'Whether the words typed so far name this sluice command'",
            "    set -l at sluice",
            "    for word in (commandline -opc)[2..-1]",
            #"        switch "$at $word""#,
            "            case \(commandPattern(nodes, separator: " "))",
            #"                set at "$at $word""#,
            "            case '*'",
            "                break",
            "        end",
            "    end",
            #"    test "$at" = "$argv[1]""#,
            "end",
            "complete -c sluice -f",
        ]
        for node in nodes {
            let condition = "-n \(quoted("__sluice_at '\(node.words)'"))"
            for subcommand in node.subcommands {
                lines.append("complete -c sluice \(condition) -a \(subcommand.name) -d \(quoted(subcommand.summary))")
            }
            if node.subcommands.isEmpty, node.operands != .none {
                let operands = node.operands == .file ? "-F" : offer(node.operands).replacingOccurrences(of: "-x ", with: "")
                lines.append("complete -c sluice \(condition) \(operands)")
            }
            for option in node.options {
                var line = "complete -c sluice \(condition)"
                for name in option.names {
                    line += name.hasPrefix("--") ? " -l \(name.dropFirst(2))" : " -s \(name.dropFirst())"
                }
                if option.takesValue { line += " " + offer(option.completion) }
                let summary = option.help.split(separator: "\n").first.map(String.init) ?? option.value ?? ""
                if !summary.isEmpty { line += " -d " + quoted(summary) }
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}
