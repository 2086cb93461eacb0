import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#endif

/// `sluice --version`.
let sluiceVersion = "0.1.0"

extension CommandLineDescription {
    /// `sluice` itself: its usage line, the options it takes before a command, and what every
    /// command shares. Its `--help` lists every command (`CommandLineDescription.help(for:)`).
    static let root = CommandSpec(
        path: [],
        synopses: [Synopsis("<command> [options]")],
        about: """
            Sluice uploads data too large for memory from a file, stdin or a synthetic source, with a
            bounded buffer: a request body, multipart/form-data, tus 1.0, or S3 multipart (parallel,
            resumable, presigned, a directory as one job).
            """,
        options: rootOptions.map(\.spec),
        notes: """
            sluice <command> --help lists a command's options.
            SOURCE is PATH, - (stdin) or synthetic:SIZE[:SEED].
            Exit status: 0 success; 1 the upload or I/O failed (one line on stderr says why);
            2 usage error; 130 interrupted (SIGINT or SIGTERM).
            """)

    /// The options `sluice` takes before a command, declared once: what each sets is the text
    /// to print.
    static var rootOptions: [Option<String?>] {
        [Option(OptionSpec("-V", "--version", help: "print the version")) { text, _ in text = "sluice \(sluiceVersion)" }]
    }

    /// `--help` of the command at `path` given `arguments`: the one form whose selector they
    /// name (`s3 presign --multipart`), else every form.
    static func help(for path: [String], arguments: [String]) -> String? {
        if let form = forms(of: path).first(where: { $0.selector.map { Arguments.mentions($0, in: arguments) } ?? false }) {
            return form.usage
        }
        return help(for: path)
    }
}

/// Prints `text` on stdout: 0, or 1 with one line when stdout cannot take it.
func printHelp(_ text: String) -> Int32 {
    do {
        try Terminal.output(text.hasSuffix("\n") ? text : text + "\n")
        return 0
    } catch {
        Terminal.error("sluice: \(error)")
        return 1
    }
}

/// The `sluice` command line: everything the executable does but `main`.
public enum CommandLineTool {
    /// Prepares the process: stdin, stdout and stderr held open even when the caller closed
    /// them (`<&-`, `>&-`); SIGPIPE ignored, so that a closed stdout is a write error with
    /// one clear line, never a signal; SIGINT/SIGTERM caught from here on. Call once, first.
    public static func installSignalHandlers() {
        reserveStandardDescriptors()
        signal(SIGPIPE, SIG_IGN)
        Signals.install()
    }

    /// A closed fd 0, 1 or 2 would be the next descriptor the process opens: `sluice s3 cp -`
    /// under `<&-` read its own signal pipe and hung, a closed stderr could take a state file
    /// or a socket. Each closed one gets `/dev/null` opened the wrong way round (stdin for
    /// writing, stdout and stderr for reading), so it is taken and still fails every read or
    /// write with EBADF, as the closed descriptor did.
    static func reserveStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let placeholder = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY)
            if placeholder >= 0, placeholder != fd {
                _ = dup2(placeholder, fd)
                _ = close(placeholder)
            }
        }
    }

    /// Runs one command line (without the program name).
    ///
    /// - Returns: The exit status: 0 success, 1 failure, 2 usage error, 130 interrupted.
    public static func run(_ arguments: [String]) async -> Int32 {
        await runCommand(arguments)
    }
}

func runCommand(_ arguments: [String]) async -> Int32 {
    guard let name = arguments.first else {
        Terminal.error(CommandLineDescription.help(for: [])!)
        return 2
    }
    let rest = Array(arguments.dropFirst())
    if OptionSpec.help.names.contains(name) { return printHelp(CommandLineDescription.help(for: [])!) }
    // `sluice version` is `sluice --version`, as git and docker take it.
    let spelled = name == "version" ? "--version" : name
    if let option = CommandLineDescription.rootOptions.first(where: { $0.spec.names.contains(spelled) }) {
        var text: String?
        do { try option.apply(&text, "") } catch {
            Terminal.error("sluice: \(error)")
            return 2
        }
        return printHelp(text ?? "")
    }
    guard let type = Commands.all.first(where: { $0.specifications[0].path == [name] }) else {
        let commands = Commands.all.map { $0.specifications[0].path[0] }
        Terminal.error(
            name.hasPrefix("-")
                ? "sluice: unknown option '\(name)': a command comes first (sluice --help)"
                : "sluice: unknown command '\(name)'\(Suggestion.hint(for: name, among: commands, quoted: true)) (sluice --help lists them)")
        return 2
    }
    let help = CommandLineDescription.help(for: [name], arguments: rest)!
    if rest.first == "-h" || rest.first == "--help" {
        // First after the command it cannot be an option's value: help, whatever the command parses.
        return printHelp(help)
    }
    let command: any Subcommand
    do {
        command = try type.init(arguments: rest)
    } catch is HelpRequested {
        return printHelp(help)
    } catch {
        // Anything wrong on the command line, found before any work: a usage error.
        Terminal.error("sluice: \(error)")
        return 2
    }
    do {
        return try await command.run()
    } catch is HelpRequested {
        // A command that parses its own subcommands (s3) finds the flag while running.
        return printHelp(help)
    } catch let error as UsageError {
        Terminal.error("sluice: \(error)")
        return 2
    } catch {
        Terminal.error("sluice: \(error)")
        return 1
    }
}
