/// `sluice help [COMMAND ...]`: what `--help` prints; `sluice help --man`: the manual page.
struct HelpCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["help"],
        synopses: [
            Synopsis("[COMMAND ...]", "what sluice or COMMAND takes, as --help prints it"),
            Synopsis("--man", "the manual page, roff (sluice help --man > sluice.1)"),
        ],
        operands: [OperandSpec("COMMAND", completion: .commands, help: "a command (upload, s3, s3 cp …)")],
        options: options.map(\.spec),
        notes: "Exit status: 0 done; 1 stdout failed; 2 usage error.")
    static var specifications: [CommandSpec] { [specification] }

    /// What is printed: the `--help` of the command named, or the manual page.
    let text: String

    /// Every option of `help`, declared once: what it sets is whether the manual is asked for.
    static var options: [Option<Bool>] {
        [Option(OptionSpec("--man", help: "the manual page of every command (roff), as sluice.1 holds it")) { manual, _ in manual = true }]
    }

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var manual = false
        try scanner.scan(Self.specification, Self.options, into: &manual)
        if manual {
            guard scanner.positionals.isEmpty else { throw UsageError("help --man takes no command: the page has them all") }
            text = CommandLineDescription.manual()
            return
        }
        guard let help = CommandLineDescription.help(for: scanner.positionals) else {
            throw UsageError("no command '\(scanner.positionals.joined(separator: " "))' (sluice --help lists them)")
        }
        text = help
    }

    func run() -> Int32 { printHelp(text) }
}

/// `sluice completions bash|zsh|fish`: a script that completes sluice's commands and options.
struct CompletionsCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["completions"],
        synopses: [Synopsis("SHELL", "a completion script for SHELL: bash, zsh or fish")],
        about: """
            Prints a script that completes sluice's commands, options and their values:
              bash   source <(sluice completions bash), or save it as
                     ~/.local/share/bash-completion/completions/sluice
              zsh    sluice completions zsh > ~/.zfunc/_sluice (a directory in $fpath, before compinit),
                     or source <(sluice completions zsh) after compinit
              fish   sluice completions fish > ~/.config/fish/completions/sluice.fish
            """,
        operands: [OperandSpec("SHELL", completion: .choices(CompletionShell.allCases.map(\.rawValue)), help: "bash, zsh or fish")],
        notes: "Exit status: 0 done; 1 stdout failed; 2 usage error.")
    static var specifications: [CommandSpec] { [specification] }

    let shell: CompletionShell

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var none: Void = ()
        try scanner.scan(Self.specification, [Option<Void>](), into: &none)
        guard scanner.positionals.count == 1, let shell = CompletionShell(rawValue: scanner.positionals[0]) else {
            throw UsageError("completions needs one shell: bash, zsh or fish")
        }
        self.shell = shell
    }

    func run() -> Int32 { printHelp(CommandLineDescription.completions(for: shell)) }
}
