import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#endif

/// `sluice --version`.
let sluiceVersion = "0.1.0"

let usage = """
usage: sluice <command> [options]      (sluice <command> --help lists a command's options)
  upload SOURCE URL [options]      send SOURCE as a request body
  receive [--port N] [--store DIR] a loopback sink answering each upload with its size and SHA-256
  checksum SOURCE                  SHA-256 of SOURCE, read the way uploads read it
  tus SOURCE ENDPOINT [options]    a resumable upload over tus 1.0
  tus --delete URL                 terminate a tus upload
  s3 cp SOURCE s3://BUCKET/KEY     a parallel, resumable S3 multipart upload
  s3 abort s3://BUCKET/KEY         abort S3 multipart uploads in progress
  s3 presign s3://B/K [options]    a presigned URL
  s3 presign s3://B/K --multipart --size N   a presigned multipart upload's plan (plan.json)
  upload --parts plan.json SOURCE  send SOURCE by such a plan, no credentials (etags.json)
  s3 complete s3://B/K --upload-id ID --parts etags.json   complete it
  demo [--size SIZE]               an upload end to end on this machine, verified
  --version, -V                    print the version
SOURCE is PATH, - (stdin) or synthetic:SIZE[:SEED].
Exit status: 0 success; 1 the upload or I/O failed (one line on stderr says why);
2 usage error; 130 interrupted (SIGINT or SIGTERM).
"""

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
        Terminal.error(usage)
        return 2
    }
    let rest = Array(arguments.dropFirst())
    switch name {
    case "--help", "-h", "help":
        guard let topic = rest.first else { return printHelp(usage) }
        guard let command = Commands.all.first(where: { $0.name == topic }) else {
            Terminal.error("sluice: no command '\(topic)' (sluice --help lists them)")
            return 2
        }
        return printHelp(command.type.usage)
    case "--version", "-V", "version":
        return printHelp("sluice \(sluiceVersion)")
    default:
        break
    }
    guard let type = Commands.all.first(where: { $0.name == name })?.type else {
        Terminal.error(name.hasPrefix("-") ? "sluice: unknown option '\(name)': a command comes first (sluice --help)"
                                           : "sluice: unknown command '\(name)' (sluice --help lists them)")
        return 2
    }
    if rest.first == "-h" || rest.first == "--help" {
        // First after the command it cannot be an option's value: help, whatever the command parses.
        return printHelp(type.usage)
    }
    let command: any Subcommand
    do {
        command = try type.init(arguments: rest)
    } catch is HelpRequested {
        return printHelp(type.usage)
    } catch {
        // Anything wrong on the command line, found before any work: a usage error.
        Terminal.error("sluice: \(error)")
        return 2
    }
    do {
        return try await command.run()
    } catch is HelpRequested {
        // A command that parses its own subcommands (s3) finds the flag while running.
        return printHelp(type.usage)
    } catch let error as UsageError {
        Terminal.error("sluice: \(error)")
        return 2
    } catch {
        Terminal.error("sluice: \(error)")
        return 1
    }
}
