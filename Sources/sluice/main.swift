import Foundation
import Sluice

let usage = """
usage: sluice <command> [options]
  upload SOURCE URL [options]      send SOURCE as a request body (sluice upload --help)
  receive [--port N] [--store DIR] a loopback sink answering each upload with its size and SHA-256
  checksum SOURCE                  SHA-256 of SOURCE, read the way uploads read it
  tus SOURCE ENDPOINT [options]    a resumable upload over tus 1.0 (sluice tus --help)
  tus --delete URL                 terminate a tus upload
  s3 cp SOURCE s3://BUCKET/KEY     a parallel, resumable S3 multipart upload (sluice s3 cp --help)
  s3 abort s3://BUCKET/KEY         abort multipart uploads in progress
  s3 presign s3://B/K [options]    a presigned URL (sluice s3 presign --help)
  demo [--size SIZE]               an upload end to end on this machine, verified
SOURCE is PATH, - (stdin) or synthetic:SIZE[:SEED].
"""

func runCommand(_ arguments: [String]) async -> Int32 {
    guard let command = arguments.first else {
        Terminal.error(usage)
        return 2
    }
    let rest = Array(arguments.dropFirst())
    if command == "s3" {
        // Each s3 subcommand has its own --help.
        do { return try await S3Command(arguments: rest).run() } catch {
            Terminal.error("sluice: \(error)")
            return 2
        }
    }
    if rest.contains("--help") || rest.contains("-h") || command == "--help" || command == "help" {
        print(command == "upload" ? UploadCommand.usage : command == "tus" ? TusCommand.usage : usage)
        return 0
    }
    do {
        switch command {
        case "upload": return try await UploadCommand(arguments: rest).run()
        case "checksum": return try ChecksumCommand(arguments: rest).run()
        case "receive": return try await ReceiveCommand(arguments: rest).run()
        case "demo": return try await DemoCommand(arguments: rest).run()
        case "tus": return try await TusCommand(arguments: rest).run()
        case "s3": return try await S3Command(arguments: rest).run()
        default:
            Terminal.error("sluice: unknown command '\(command)'\n\(usage)")
            return 2
        }
    } catch let error as UsageError {
        Terminal.error("sluice: \(error)")
        return 2
    } catch {
        Terminal.error("sluice: \(error)")
        return 2
    }
}

exit(await runCommand(Array(CommandLine.arguments.dropFirst())))
