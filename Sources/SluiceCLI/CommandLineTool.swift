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
            \(wrapped("Exit status: " + exitStatuses.map { "\($0.status) \($0.meaning)" }.joined(separator: "; ") + "."))
            """)

    /// `text` broken at spaces into lines of at most `width` characters.
    static func wrapped(_ text: String, width: Int = 96) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        return (lines + [line]).joined(separator: "\n")
    }

    /// What each exit status means, for every command: `--help`'s notes and the man page's
    /// EXIT STATUS are made from this list.
    static let exitStatuses: [(status: Int32, meaning: String)] = [
        (0, "success"),
        (1, "the upload or I/O failed (one line on stderr says why)"),
        (2, "usage error (nothing was sent)"),
        (130, "interrupted (SIGINT or SIGTERM): s3 cp, cp -r, sync, tus and upload --parts resume when the same command runs again"),
    ]

    /// The environment variables sluice reads, and what for (the man page's ENVIRONMENT).
    static let environment: [(name: String, meaning: String)] = [
        ("AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN", "credentials for s3 commands (before the profile's)"),
        ("AWS_PROFILE, AWS_DEFAULT_PROFILE", "the profile of the shared files to use (--profile wins)"),
        ("AWS_REGION, AWS_DEFAULT_REGION", "the region (--region wins; else the profile's, else us-east-1)"),
        ("AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL", "a custom S3 endpoint (--endpoint-url wins); AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores them"),
        ("AWS_CA_BUNDLE", "CAs to trust for https to S3 (--ca-bundle wins)"),
        ("AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE", "where the shared credentials and config files are"),
        ("SLUICE_SSE_C_KEY_FILE", "the SSE-C key file when --sse-c is given without --sse-c-key-file"),
        ("XDG_CACHE_HOME", "where resume records live (default ~/.cache): sluice/s3, sluice/tus, sluice/s3-presigned, sluice/jobs"),
    ]

    /// The files sluice reads or writes, and what for (the man page's FILES).
    static let files: [(path: String, meaning: String)] = [
        ("~/.aws/credentials, ~/.aws/config", "credentials, region, endpoint and CA bundle of each profile, read as the AWS CLI reads them"),
        ("~/.cache/sluice/s3", "records of multipart uploads in progress, so the same command resumes them (--state DIR)"),
        ("~/.cache/sluice/jobs", "the record of a directory job (s3 cp -r, s3 sync): the files already sent"),
        ("~/.cache/sluice/tus", "tus uploads in progress, by endpoint and source"),
        ("~/.cache/sluice/s3-presigned", "the parts upload --parts has had accepted"),
    ]

    /// Examples for the man page's EXAMPLES: a command line and what it does.
    static let examples: [(command: String, meaning: String)] = [
        ("sluice demo --size 1GiB", "a verified upload to a loopback receiver, with its speed and peak memory"),
        ("sluice upload big.iso https://example.com/upload -X PUT", "a file as one request body, streamed in flat memory"),
        ("sluice s3 cp big.iso s3://bucket/isos/big.iso", "one object, multipart and parallel; the same command resumes it after Ctrl-C or kill -9"),
        ("sluice s3 sync photos s3://bucket/photos/ --delete --dryrun", "what a sync would send and delete, as aws s3 sync --dryrun prints it"),
        ("sluice s3 cp -r logs s3://bucket/logs/ --files-from list.txt", "the files list.txt names (paths relative to logs), as one resumable job"),
        ("sluice tus video.mp4 https://tus.example.com/files/", "a resumable tus 1.0 upload"),
    ]

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
        let status = await runCommand(arguments)
        // Lines still held for stdout (`Terminal.line`) go out before the exit; a command
        // that printed them asked for their failure already, this is the last word.
        if let failure = Terminal.flushLines(), status == 0 {
            Terminal.error("sluice: \(failure)")
            return 1
        }
        return status
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
