import Foundation
import Sluice

/// `sluice s3 sync DIR s3://BUCKET/PREFIX/`: the files below DIR sent where their object is
/// missing or differs, as `aws s3 sync` decides; `--delete` removes objects with no file.
struct S3SyncCommand {
    static let specification = CommandSpec(
        path: ["s3", "sync"],
        synopses: [
            Synopsis("DIR s3://BUCKET/PREFIX/ [options]", "send what is new or changed below DIR (aws s3 sync's rules)"),
            Synopsis("s3://BUCKET/PREFIX/ s3://BUCKET/PREFIX/ [options]", "copy what is new or changed below a prefix, by the store"),
        ],
        about: """
            The walk of DIR and the listing of PREFIX are joined in one pass (memory does not grow
            with the number of files or objects); no request is made per object the listing decides.
            A file is sent when its object is missing, the sizes differ, or the file is newer than the
            object's LastModified (as aws s3 sync; --size-only: sizes alone). --checksum compares the
            bytes of each file with what its object of the same size carries: a full-object checksum
            (CRC64NVME, CRC32C, CRC32), a composite one recomputed with the object's part size, or a
            single-part object's ETag (the MD5 of its bytes unless SSE-KMS or SSE-C); objects that carry
            none are compared by size and time, and counted. The files go as one job, as with
            s3 cp -r: it resumes where it stopped. The upload's checksum is --checksum-algorithm.
            """,
        operands: [OperandSpec("DIR", completion: .directory), OperandSpec("s3://BUCKET/PREFIX/")],
        options: S3CommonOptions.options.map(\.spec) + options.map(\.spec),
        notes: "An interrupted sync resumes when the same command runs again; what the listing shows sent is not sent again.")

    /// The options of `s3 cp` that `s3 sync` does not take.
    static let takenFromCopy: Set<String> = ["--recursive", "--equal-parts", "--checksum", "--source-header"]

    /// What the options set: sync's own, and `s3 cp`'s that it takes.
    struct Settings {
        var copy = S3CopyCommand.Settings()
        var deletes = false
        var maximumDeletes: Int?
        var comparison = SyncComparison.sizeAndTime
    }

    /// Every option of `s3 sync` but the common ones, declared once: its own, then those of
    /// `s3 cp` it takes.
    static var options: [Option<Settings>] {
        [
            Option(
                OptionSpec(
                    "--delete",
                    help: """
                        delete objects under PREFIX with no file (after the filters; with --shard,
                        only objects in the shard), 1,000 a request; never when the walk could not
                        read a path; not with --files-from
                        """)
            ) { settings, _ in settings.deletes = true },
            Option(OptionSpec("--max-delete", value: "N", help: "with --delete: delete nothing when more than N objects are to go")) {
                $0.maximumDeletes = try Arguments.count($1, option: "--max-delete", in: 0...Int.max)
            },
            Option(OptionSpec("--size-only", help: "send a file only when its object is missing or of another size")) { settings, _ in
                if settings.comparison == .checksum { throw UsageError("--size-only and --checksum exclude each other") }
                settings.comparison = .sizeOnly
            },
            Option(
                OptionSpec(
                    "--checksum",
                    help: """
                        send a file when its bytes differ from its object's (its checksum or MD5 ETag),
                        whatever the times; read each file of its object's size once
                        """)
            ) { settings, _ in
                if settings.comparison == .sizeOnly { throw UsageError("--size-only and --checksum exclude each other") }
                settings.comparison = .checksum
            },
        ] + S3CopyCommand.Settings.options.filter { !takenFromCopy.contains($0.spec.name) }.within(\.copy)
    }

    var copy: S3CopyCommand
    var deletes = false
    var maximumDeletes: Int?
    var comparison = SyncComparison.sizeAndTime

    init(arguments: [String]) throws {
        var scanned = Settings()
        try Self.refuseChecksumValue(arguments)
        let parsed = try S3Arguments(arguments, command: Self.specification, options: Self.options, into: &scanned)
        var settings = scanned.copy
        let (deletes, maximumDeletes, comparison) = (scanned.deletes, scanned.maximumDeletes, scanned.comparison)
        guard parsed.positionals.count == 2 else { throw UsageError("s3 sync needs DIR and s3://BUCKET/PREFIX/") }
        if maximumDeletes != nil, !deletes { throw UsageError("--max-delete goes with --delete") }
        if deletes, settings.walk.filesFrom != nil {
            throw UsageError("--delete does not go with --files-from: a list names files to send, not all that the prefix is to hold")
        }
        // A prefix is synced below a prefix (`S3PrefixCopy`), a directory by a walk.
        if !parsed.positionals[0].hasPrefix("s3://") { try S3CopyCommand.checkDirectory(parsed.positionals[0], command: "s3 sync") }
        settings.walk.recursive = true
        copy = try S3CopyCommand(settings: settings, parsed: parsed)
        // sync's --checksum compares; only --checksum-algorithm asks the store for one.
        if !parsed.given.contains("--checksum-algorithm") { copy.options.storeCopyChecksum = nil }
        self.deletes = deletes
        self.maximumDeletes = maximumDeletes
        self.comparison = comparison
    }

    /// `s3 sync --checksum ALGO` (as `s3 cp --checksum ALGO`): on sync `--checksum` compares by
    /// content and takes no value; the upload's algorithm is `--checksum-algorithm`.
    static func refuseChecksumValue(_ arguments: [String]) throws {
        for (index, item) in arguments.enumerated() {
            if item == "--" { return }
            let value: String?
            if item.hasPrefix("--checksum=") {
                value = String(item.dropFirst("--checksum=".count))
            } else if item == "--checksum", index + 1 < arguments.count,
                S3ObjectArguments.algorithmNames.contains(arguments[index + 1].lowercased())
            {
                value = arguments[index + 1]
            } else {
                value = nil
            }
            if let value {
                throw UsageError(
                    "s3 sync --checksum compares files by content and takes no value; the upload's checksum algorithm is --checksum-algorithm \(value)"
                )
            }
        }
    }

    func run() async -> Int32 {
        if let source = copy.prefixSource {
            return await copy.runPrefix(
                from: source, command: "s3 sync", comparison: comparison, deletes: deletes, maximumDeletes: maximumDeletes)
        }
        guard let (destination, job) = copy.prepareJob(command: "s3 sync") else { return 2 }
        var sync = S3Sync(job: job)
        sync.comparison = comparison
        sync.deletes = deletes
        sync.maximumDeletes = maximumDeletes
        let configured = sync
        let dryRun = copy.dryRun
        let bucket = destination.bucket
        let lines = TransferLines(level: copy.level, dryRun: dryRun)
        let json = copy.progress == .json
        let decided: @Sendable (SyncDecision) -> Void = { decision in
            if json { Terminal.error(DecisionLine(decision, bucket: bucket, dryRun: dryRun).json) }
            switch decision {
            // A real run tells each file once it is stored (the job's events).
            case .upload(let path, let key, _): if dryRun { lines.upload(path, to: "s3://\(bucket)/\(key)") }
            case .delete(let key): lines.delete("s3://\(bucket)/\(key)")
            }
        }
        let result = await ProgressPrinter.runReporting(style: dryRun ? .none : lines.progress(copy.progress)) { printer in
            try await configured.run(
                to: destination, dryRun: dryRun, decided: decided, progress: S3CopyCommand.jobReporter(printer),
                events: { lines.tell($0, bucket: bucket) })
        }
        switch result {
        case .success(let done):
            return report(done, destination: destination, lines: lines)
        case .failure(let error):
            return S3CopyCommand.jobFailed(error, command: "s3 sync")
        }
    }

    /// Prints what the sync did; the exit status.
    func report(_ done: S3Sync.Result, destination: S3JobDestination, lines: TransferLines) -> Int32 {
        let dryRun = copy.dryRun
        let notes = lines.showsWarnings ? done.job?.notes ?? [] : []
        var failures: [String] = done.job.map { $0.failures.map(\.description) } ?? done.walkFailures.map(\.description)
        if let record = done.job?.recordFailure {
            failures.append("\(record): the job stopped starting files; make room for the record and run the same command again")
        }
        if done.order == .hierarchical, lines.showsWarnings {
            Terminal.error("sluice: s3 sync: the server lists keys as a file system does (a/b before a-b), not in S3's order: joined in its order")
        }
        for note in notes { Terminal.error("sluice: s3 sync: \(note)") }
        for failure in failures { Terminal.error("sluice: s3 sync: \(failure)") }
        for failure in done.deleteFailures { Terminal.error("sluice: s3 sync: s3://\(destination.bucket)/\(failure)") }
        var withheld = false
        switch done.withheld {
        case .walkFailed(let count):
            Terminal.error(
                "sluice: s3 sync: \(counted(done.toDelete, "object")) with no file not deleted: the walk could not read \(counted(count, "path")), whose objects would look like objects with no file"
            )
            withheld = true
        case .filesFailed(let count):
            Terminal.error(
                "sluice: s3 sync: \(counted(done.toDelete, "object")) with no file not deleted: \(counted(count, "file")) could not be sent, and a file gone since the walk may be one moved, not deleted"
            )
            withheld = true
        case .recordFailed:
            Terminal.error(
                "sluice: s3 sync: \(counted(done.toDelete, "object")) with no file not deleted: the job's record could not be written, so the job stopped before every file was compared"
            )
            withheld = true
        case .viewChanged(let count):
            for change in done.viewChanges { Terminal.error("sluice: s3 sync: \(change)") }
            Terminal.error(
                "sluice: s3 sync: \(counted(done.toDelete, "object")) with no file not deleted: \(counted(count, "directory", plural: "directories")) walked no longer named what the walk read, whose files may be elsewhere now"
            )
            withheld = true
        case .overLimit(let found, let limit):
            Terminal.error("sluice: s3 sync: \(counted(found, "object")) with no file, more than --max-delete \(limit): none deleted")
            withheld = true
        case nil: break
        }
        if let outputError = lines.outputError {
            Terminal.error("sluice: \(outputError)")
            return 1
        }
        let failed = !failures.isEmpty || !done.deleteFailures.isEmpty || withheld
        let verb = dryRun ? "to send" : "sent"
        let sent = dryRun ? done.toSend : done.job?.uploaded ?? done.toSend
        var summary = "\(counted(sent, "file")) \(verb), \(done.unchanged) unchanged"
        if deletes { summary += ", \(done.deleted) \(dryRun ? "to delete" : "deleted")" }
        if comparison == .checksum {
            summary += "; compared by content \(done.comparedByContent), by size and time only \(done.comparedBySizeAndTime)"
        }
        if let job = done.job {
            if job.kept > 0 { summary += ", \(job.kept) exists, kept" }
            // A dry run's line names failures only when there are some (what it tells is what would go).
            if !dryRun || !job.failures.isEmpty { summary += ", \(job.failures.count) failed" }
            if !dryRun { summary += "; \(job.bytesSent) bytes in \(String(format: "%.2f", job.elapsed)) s" }
        }
        if lines.showsSummary || failed { Terminal.error("sluice: \(dryRun ? "s3 sync --dryrun: " : "")\(summary)") }
        return failed ? 1 : 0
    }
}

/// A decision of `s3 sync` as a `--progress json` line on stderr:
/// `{"decision":"upload","dryrun":true,"path":"…","reason":"newer","url":"s3://B/K"}`, or
/// `{"decision":"delete","dryrun":false,"url":"s3://B/K"}`.
struct DecisionLine: Encodable {
    var decision: String
    var dryrun: Bool
    var path: String?
    var reason: String?
    /// A prefix copy's source object.
    var source: String?
    var url: String

    init(_ decision: SyncDecision, bucket: String, dryRun: Bool) {
        dryrun = dryRun
        switch decision {
        case .upload(let path, let key, let reason):
            (self.decision, self.path, self.reason, url) = ("upload", path, reason.rawValue, "s3://\(bucket)/\(key)")
        case .delete(let key):
            (self.decision, url) = ("delete", "s3://\(bucket)/\(key)")
        }
    }

    /// One line of JSON, keys sorted.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
