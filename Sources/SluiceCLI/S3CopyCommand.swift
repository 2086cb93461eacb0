import Foundation
import Sluice

/// `sluice s3 cp SOURCE s3://BUCKET/KEY [options]`: an upload to S3, multipart and resumable.
struct S3CopyCommand {
    static let specification = CommandSpec(
        path: ["s3", "cp"],
        synopses: [Synopsis("SOURCE s3://BUCKET/KEY [options]", "a parallel, resumable S3 multipart upload")],
        operands: [.source, OperandSpec("s3://BUCKET/KEY")],
        options: S3CommonOptions.options.map(\.spec) + Settings.options.map(\.spec),
        notes: """
            An interrupted upload of a file resumes when the same command runs again. SOURCE may be an
            object, s3://BUCKET/KEY: on the same endpoint with the same credentials the store copies it
            (CopyObject, or UploadPartCopy in parts), no byte of it through sluice; from another store
            (--source-endpoint-url, --source-region, --source-profile), or when the destination does not
            implement the copy (501), its ranges are read pinned to its ETag and streamed into the upload.
            The copy keeps the source's content type and metadata unless --metadata-directive REPLACE.
            With --recursive, a prefix, s3://BUCKET/PREFIX/: each object below it copied so below the
            destination prefix.
            """)

    var source: String
    var location: S3Location
    var common: S3CommonOptions
    var options = S3Options()
    var progress = ProgressPrinter.Style.auto
    var walk = Walk()
    var transport = TransportKind.platformDefault
    /// `--quiet`, `--only-show-errors`.
    var level = TransferLines.Level.all
    /// `--dryrun`: tell what would be sent, send nothing.
    var dryRun = false
    /// The options given (a profile's `s3 =` settings do not override them).
    var given: Set<String> = []
    /// SOURCE as an object (`s3://BUCKET/KEY`): copied by the store.
    var copySource: S3Location?
    /// SOURCE as a prefix (`-r s3://BUCKET/PREFIX/`): its objects copied by the store.
    var prefixSource: S3Location?
    var remote = RemoteSourceOptions()
    /// Where an s3:// SOURCE is read (`--source-endpoint-url`, `--source-region`, `--source-profile`).
    var sourceStore = SourceStore()

    /// `--recursive` and what goes with it: SOURCE is a directory, uploaded as one job
    /// (`S3CopyCommand+Recursive`).
    struct Walk {
        var recursive = false
        var filters: [PathFilter.Rule] = []
        var followsSymlinks = true
        var shard: KeyShard?
        /// `--files-from`: a path, or `-` for stdin.
        var filesFrom: String?
        var separator = PathList.Separator.newline

        /// Whether an option other than `--recursive` itself was given.
        var isSet: Bool { !filters.isEmpty || !followsSymlinks || shard != nil || filesFrom != nil || separator != .newline }
    }

    /// What the options of `s3 cp` set, gathered as they are scanned (`s3 sync` takes them too).
    struct Settings {
        var options = S3Options()
        var progress = ProgressPrinter.Style.auto
        var walk = Walk()
        var transport = TransportKind.platformDefault
        var gathered = S3ObjectArguments.Gathered()
        var level = TransferLines.Level.all
        var dryRun = false
        var source = RemoteSourceOptions()
        var sourceStore = SourceStore()

        /// Every option of `s3 cp` but the common ones, declared once: shown by `--help`, the
        /// man page and the completions, and applied by the parser (`s3 sync` takes most).
        static var options: [Option<Settings>] {
            [
                Option(
                    OptionSpec(
                        "--part-size", value: "SIZE",
                        help: """
                            default 8MiB, grown to stay within 10,000 parts; for stdin, the first
                            part size (later parts grow unless --equal-parts)
                            """)
                ) { $0.options.partSize = try ByteCount.parse($1) },
                Option(OptionSpec("--concurrency", value: "N", help: "parts in flight (default 8)")) {
                    guard let count = Int($1), (1...256).contains(count) else { throw UsageError("--concurrency needs a count, 1 ... 256") }
                    $0.options.concurrency = count
                },
                Option(
                    .choice(
                        "--payload-signing", among: ["auto", "chunked", "trailer", "unsigned", "sha256"],
                        help: """
                            auto: https unsigned aws-chunked + checksum trailer, http signed chunks
                            (a body under 64 KiB: its SHA-256 signed in the header, checksum header)
                            """)
                ) {
                    guard let signing = S3PayloadSigning(rawValue: $1) else {
                        throw UsageError("unknown payload signing '\($1)': use auto, chunked, trailer, unsigned or sha256")
                    }
                    $0.options.payloadSigning = signing
                },
                Option(OptionSpec("--state", value: "DIR", completion: .directory, help: "resume records (default ~/.cache/sluice/s3)")) {
                    guard !$1.isEmpty else { throw UsageError("--state needs a directory") }
                    $0.options.stateDirectory = $1
                },
                Option(OptionSpec("--restart", help: "abort a stored upload of this source and object, start again")) { settings, _ in
                    settings.options.restart = true
                },
                Option(OptionSpec("--equal-parts", help: "every stdin part the same size (Cloudflare R2, Garage need it)")) { settings, _ in
                    settings.options.equalParts = true
                },
                Option(OptionSpec("--retries", value: "N", help: "transient failures retried per request, 0 ... 1000 (default 5)")) {
                    $0.options.retries = try Arguments.count($1, option: "--retries", in: 0...1000)
                },
                Option.transport(\.transport).with(
                    help: """
                        default curl; urlsession on Linux sends bodies of at most 8 MiB
                        as sent (it holds each to send its length): parts default to 7 MiB
                        """),
                .progress(\.progress),
                .noProgress(\.progress),
                Option(
                    OptionSpec(
                        "--dryrun",
                        help: """
                            print what would be sent (s3 sync: and deleted) on stdout as the AWS CLI
                            does, after (dryrun); send nothing (the server decides --no-clobber and
                            --if-match only when a file is sent)
                            """)
                ) { settings, _ in settings.dryRun = true },
                Option(OptionSpec("--only-show-errors", help: "print failures and warnings only: no per-file lines, progress or summary")) {
                    settings, _ in if settings.level != .quiet { settings.level = .onlyErrors }
                },
                Option(OptionSpec("--quiet", help: "print failures only (exit status tells the rest)")) { settings, _ in
                    settings.level = .quiet
                },
                Option(
                    OptionSpec(
                        "-r", "--recursive",
                        help: """
                            SOURCE is a directory: every file below it goes to PREFIX + its path,
                            as one job that resumes where it stopped (records under --state)
                            """)
                ) { settings, _ in settings.walk.recursive = true },
                Option(OptionSpec("--include", value: "GLOB", help: "with -r: which files (the AWS CLI's rules: the last match wins)")) {
                    $0.walk.filters.append(.include(GlobPattern($1)))
                },
                Option(OptionSpec("--exclude", value: "GLOB", help: "with -r: which files not (the AWS CLI's rules: the last match wins)")) {
                    $0.walk.filters.append(.exclude(GlobPattern($1)))
                },
                Option(OptionSpec("--no-follow-symlinks", help: "with -r: skip symlinks (followed by default, loops reported)")) { settings, _ in
                    settings.walk.followsSymlinks = false
                },
                Option(
                    OptionSpec(
                        "--shard", value: "K/N",
                        help: """
                            with -r: only the files whose path falls in shard K of N (K from 0 to N-1,
                            as JOB_COMPLETION_INDEX; a SHA-256 of the path, the same on every machine);
                            each shard keeps its own record
                            """)
                ) {
                    do { $0.walk.shard = try KeyShard(parsing: $1) } catch { throw UsageError("--shard \(error)") }
                },
                Option(
                    OptionSpec(
                        "--files-from", value: "FILE",
                        help: """
                            with -r: the files FILE names (- for stdin), one path a line relative to
                            SOURCE, instead of a walk; any order; nothing is sent if one names no file
                            """)
                ) {
                    guard !$1.isEmpty else { throw UsageError("--files-from needs a file, or - for stdin") }
                    $0.walk.filesFrom = $1
                },
                Option(OptionSpec("-0", "--null", help: "with --files-from: the paths end in NUL bytes (find -print0), not newlines")) { settings, _ in
                    settings.walk.separator = .nul
                },
                .sourceHeader(\.source),
            ] + SourceStore.options(\.sourceStore) + [
                Option(
                    .choice(
                        "--metadata-directive", among: ["COPY", "REPLACE"],
                        help: """
                            with an s3:// SOURCE: COPY keeps its content type, attributes and
                            metadata (the default, unless --metadata is given); REPLACE takes
                            those of the options given
                            """)
                ) {
                    guard let directive = S3MetadataDirective(rawValue: $1) else {
                        throw UsageError("unknown metadata directive '\($1)': use COPY or REPLACE")
                    }
                    $0.options.object.metadataDirective = directive
                }
            ] + S3ObjectArguments.options(\.options, \.gathered)
        }

        /// Checks the object options together, once every option was taken.
        mutating func finish(_ common: S3CommonOptions) throws {
            try S3ObjectArguments.finish(gathered, &options)
            options.transfer = common.transfer
            // The source's reads keep to the same rate, from a cap of their own.
            options.sourceRateLimit = common.transfer.rateLimit.flatMap { try? RateLimit(bytesPerSecond: $0.bytesPerSecond) }
        }
    }

    init(arguments: [String]) throws {
        var settings = Settings()
        let parsed = try S3Arguments(arguments, command: Self.specification, options: Settings.options, into: &settings)
        try self.init(settings: settings, parsed: parsed)
    }

    init(settings: Settings, parsed: S3Arguments) throws {
        var settings = settings
        try settings.finish(parsed.common)
        let (options, progress, walk, transport) = (settings.options, settings.progress, settings.walk, settings.transport)
        guard parsed.positionals.count == 2 else { throw UsageError("s3 cp needs SOURCE and s3://BUCKET/KEY") }
        source = parsed.positionals[0]
        var location = try parsed.location(at: 1)
        if walk.separator != .newline, walk.filesFrom == nil { throw UsageError("--null goes with --files-from") }
        if !source.hasPrefix("s3://"), settings.sourceStore.isGiven || options.object.metadataDirective != nil {
            throw UsageError("--source-endpoint-url, --source-region, --source-profile and --metadata-directive go with an s3:// SOURCE")
        }
        if source.hasPrefix("s3://"), walk.recursive {
            // A prefix below a prefix, each object copied by the store (`S3PrefixCopy`).
            guard walk.followsSymlinks else { throw UsageError("--no-follow-symlinks goes with a directory; s3://… has no symlinks") }
            prefixSource = try S3Arguments.location(source)
            // On one store (no source option: the destination's); another is checked once its client is made.
            if !settings.sourceStore.isGiven, let overlap = S3PrefixCopy.OverlappingPrefixes.check(prefixSource!, location) {
                throw UsageError("\(overlap)")
            }
        } else if source.hasPrefix("s3://") {
            // An object to an object, copied by the store (`S3Client.copy`).
            guard !walk.isSet else {
                throw UsageError("--include, --exclude, --shard and --files-from go with --recursive (a prefix: s3 cp -r s3://BUCKET/PREFIX/ …)")
            }
            // An object, not a prefix: refused as SourceSpecification refuses it.
            guard case .object(let copied) = try SourceSpecification(parsing: source) else {
                throw UsageError("invalid source '\(source)': expected s3://BUCKET/KEY")
            }
            location = try Self.resolving(location, forSourceNamed: copied.key.split(separator: "/").last.map(String.init))
            copySource = copied
        } else if walk.recursive {
            try Self.checkDirectory(source)
        } else {
            guard !walk.isSet else {
                throw UsageError("--include, --exclude, --no-follow-symlinks, --shard and --files-from go with --recursive")
            }
            // A malformed SOURCE is a usage error (2).
            if case .file(let path) = try SourceSpecification(parsing: source) {
                location = try Self.resolving(location, forSourceNamed: (path as NSString).lastPathComponent)
            }
            if location.key.isEmpty { throw UsageError("s3 cp \(source) needs the object's key: s3://\(location.bucket)/KEY") }
        }
        self.location = location
        common = parsed.common
        level = settings.level
        dryRun = settings.dryRun
        given = parsed.given
        self.transport = transport
        self.options = options
        // A copy by the store asks it for a checksum only when one was named.
        if source.hasPrefix("s3://"), !parsed.given.isDisjoint(with: ["--checksum-algorithm", "--checksum"]) {
            self.options.storeCopyChecksum = options.checksum
        }
        self.progress = progress
        self.walk = walk
        remote = settings.source.adopting(options.transfer, retry: options.retryPolicy)
        sourceStore = settings.sourceStore
    }

    func run() async -> Int32 {
        if let prefixSource { return await runPrefix(from: prefixSource, command: "s3 cp") }
        if walk.recursive { return await runRecursive() }
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(common.overrides) } catch {
            Terminal.error("sluice: s3 cp: \(error)")
            return 2
        }
        let lines = TransferLines(level: level, dryRun: dryRun)
        if let copySource {
            let client = S3Client(configuration: configuration, options: options(taking: configuration.transfer), transport: transport)
            return await runCopy(from: copySource, with: client, lines: lines)
        }
        if dryRun { return dryRunOne(lines) }
        let client = S3Client(configuration: configuration, options: options(taking: configuration.transfer), transport: transport)
        let source = self.source
        let (location, remote) = (self.location, remote(for: client.options))
        let result = await ProgressPrinter.run(style: lines.progress(progress)) { report in
            try await client.upload(source: source, to: location, remote: remote, progress: report)
        }
        switch result {
        case .success(let upload):
            tellUpload(lines)
            if let error = lines.outputError {
                // The object is stored: say so, with why stdout failed.
                Terminal.error("sluice: s3 cp: \(upload.summary), but \(error)")
                return 1
            }
            if lines.showsSummary { Terminal.error("sluice: \(upload.summary)") }
            return 0
        case .failure(let error):
            let error = error as? S3Error ?? S3Error(.transport, "\(error)")
            // Not after a refusal the same command would meet again (a changed source, resume
            // state it cannot use): --restart is what the line asks for then.
            let resumable =
                source != "-" && error.uploadID != nil && error.code != .sourceChanged && error.code != .state
                && error.code != .stateDirectory
            var line = error.message + Self.flagHint(for: error)
            if error.code == .cancelled {
                line = "interrupted"
                if let completion = error.completion {
                    line += Self.interruptedCompletion(completion, uploadID: error.uploadID, location: location)
                } else if resumable, let id = error.uploadID {
                    line += "; upload \(id) is kept: run the same command again to resume, or `sluice s3 abort \(location) --upload-id \(id)` to remove it"
                } else if error.uploadID != nil {
                    line += "; \(error.message)"
                }
                Terminal.error("sluice: s3 cp: \(line)")
                return 130
            }
            if resumable, let id = error.uploadID {
                line += "; upload \(id) is kept: run the same command to resume, or `sluice s3 abort \(location) --upload-id \(id)`"
            }
            Terminal.error("sluice: s3 cp: \(line)")
            return error.exitStatus
        }
    }
}

extension S3CopyCommand {
    /// The options with the profile's transfer settings (`s3 =` in `~/.aws/config`) where no
    /// flag gave its own, as the AWS CLI applies them: `multipart_chunksize` (`--part-size`),
    /// `multipart_threshold`, `max_concurrent_requests` (`--concurrency`), `max_bandwidth`
    /// (`--limit-rate`).
    func options(taking settings: S3TransferSettings) -> S3Options {
        let flags: [String: S3TransferSettings.Setting] = [
            "--part-size": .multipartChunkSize, "--concurrency": .maximumConcurrentRequests, "--limit-rate": .maximumBandwidth,
        ]
        return options.applying(settings, keeping: Set(given.compactMap { flags[$0] }))
    }

    /// An http(s) source's options for a run with `options` (`options(taking:)`'s): its GETs
    /// keep to the source's cap there, `--limit-rate`'s or the profile's `max_bandwidth`, as a
    /// streamed copy's reads of an `s3://` source do (the profile's had capped only those).
    func remote(for options: S3Options) -> RemoteSourceOptions {
        var remote = self.remote
        remote.rateLimit = options.sourceRateLimit
        return remote
    }

    /// `s3 cp s3://A/K s3://B/K2`: the object copied by the store; `copy: s3://A/K to
    /// s3://B/K2` on stdout, as the AWS CLI tells it, the summary on stderr.
    func runCopy(from source: S3Location, with client: S3Client, lines: TransferLines) async -> Int32 {
        let told = "\(source) to \(location)"
        let location = self.location
        let reader: S3Client?
        do { reader = sourceStore.isGiven ? try sourceStore.client(over: common.overrides, destination: client, transport: transport) : nil } catch {
            Terminal.error("sluice: s3 cp: \(error)")
            return 2
        }
        if let refusal = unusedByStore(client: client, reader: reader) {
            Terminal.error("sluice: s3 cp: \(refusal)")
            return 2
        }
        if dryRun {
            lines.copy(told)
            return lines.outputError == nil ? 0 : 1
        }
        let result = await ProgressPrinter.run(style: lines.progress(progress)) { report in
            try await client.copy(source, from: reader, to: location, progress: report)
        }
        switch result {
        case .success(let copied):
            if let refusal = copied.storeRefusal {
                Terminal.error(
                    "sluice: s3 cp: the destination does not copy objects itself (\(refusal.action) answered \(refusal.status.map(String.init) ?? "") \(refusal.serverCode ?? "")): streamed through sluice instead"
                )
            }
            lines.copy(told)
            let summary = "copied \(told): \(copied.length) bytes \(Self.how(copied)), ETag \(copied.eTag), \(counted(copied.retries, "retry", plural: "retries"))"
            if let error = lines.outputError {
                Terminal.error("sluice: s3 cp: \(summary), but \(error)")
                return 1
            }
            if lines.showsSummary { Terminal.error("sluice: \(summary), \(String(format: "%.1f", copied.elapsed)) s") }
            return 0
        case .failure(let error):
            let error = error as? S3Error ?? S3Error(.transport, "\(error)")
            if error.code == .cancelled {
                let kept = error.uploadID.map { "; upload \($0) is kept: run the same command again to resume" } ?? ""
                Terminal.error("sluice: s3 cp: interrupted; nothing of \(location) was stored\(kept)")
                return 130
            }
            // A streamed copy's multipart upload resumes as an upload's does.
            let kept =
                error.uploadID.map { "; upload \($0) is kept: run the same command to resume, or `sluice s3 abort \(location) --upload-id \($0)`" }
                ?? ""
            Terminal.error("sluice: s3 cp: \(error.message)\(kept)")
            return error.exitStatus
        }
    }

    /// The options given that only bytes passing through sluice use: a copy the store makes
    /// (`CopyObject`, `UploadPartCopy`) sends none.
    static let unusedByStoreCopies = ["--payload-signing", "--equal-parts", "--limit-rate"]

    /// One line refusing the first of `unusedByStoreCopies` given when the store will copy: no
    /// source client (`reader`), or one of the destination's store (`S3Client.sharesStore`);
    /// nil when none was given or the copy is streamed. A store that turns out not to copy
    /// (501, streamed instead) is known only after a request: its options are then used.
    func unusedByStore(client: S3Client, reader: S3Client?) -> String? {
        guard reader.map({ client.sharesStore(with: $0) }) ?? true, let option = Self.unusedByStoreCopies.first(where: given.contains) else {
            return nil
        }
        return
            "\(option) is not used by a copy the store makes (no byte of it passes through sluice): leave it out, or name another store with --source-endpoint-url or --source-profile to stream the copy"
    }

    /// How a copy went, for its summary: by the store in one call or in parts, or streamed.
    static func how(_ copied: S3CopyResult) -> String {
        switch copied.route {
        case .store:
            let skipped = copied.partsSkipped > 0 ? ", \(copied.partsSkipped) already at the server" : ""
            return copied.partCount.map { "in \(counted($0, "part")) (UploadPartCopy\(skipped))" } ?? "in one CopyObject"
        case .streamed:
            let parts = copied.partCount.map { "in \(counted($0, "part"))" } ?? "in one PutObject"
            let skipped = copied.partsSkipped > 0 ? " (\(copied.partsSkipped) already at the server)" : ""
            return "streamed \(parts)\(skipped), \(copied.bytesSent) sent"
        }
    }

    /// `location`, or, when it names a folder (`s3://b/dir/`, `s3://b`), the source's `name`
    /// below it, as the AWS CLI names it (`S3Location.resolvingKey`); a usage error when that
    /// key cannot be.
    static func resolving(_ location: S3Location, forSourceNamed name: String?) throws -> S3Location {
        do { return try location.resolvingKey(forSourceNamed: name) } catch { throw UsageError("\(error)") }
    }

    /// `upload: SOURCE to s3://BUCKET/KEY`, as the AWS CLI tells a file stored; nothing for
    /// stdin (the AWS CLI prints no line for a stream).
    func tellUpload(_ lines: TransferLines) {
        let url = "s3://\(location.bucket)/\(location.key)"
        switch try? SourceSpecification(parsing: source) {
        case .file(let path)?: lines.upload(path, to: url)
        case .standardInput?, nil: return
        case .synthetic?: lines.upload(shown: source, to: url)
        // A URL as typed, a password in it shown as `***`.
        case .remote(let remote)?: lines.upload(shown: Redaction.secrets(in: remote.absoluteString), to: url)
        // An object is copied by the store (`runCopy`), told as a copy.
        case .object?: return
        }
    }

    /// `s3 cp --dryrun` of one SOURCE: opened as the upload would open it (a file that is missing,
    /// unreadable or a directory fails as it would), closed, told; no request.
    func dryRunOne(_ lines: TransferLines) -> Int32 {
        do {
            let opened = try SourceSpecification(parsing: source).open()
            opened.close()
        } catch {
            let hint = if case .isDirectory = error as? ByteSourceError { Self.directoryHint } else { "" }
            Terminal.error("sluice: s3 cp: \(error)\(hint)")
            return 1
        }
        tellUpload(lines)
        if let error = lines.outputError {
            Terminal.error("sluice: \(error)")
            return 1
        }
        return 0
    }

    /// What the server says of an upload interrupted while it was being completed.
    static func interruptedCompletion(_ completion: S3InterruptedCompletion, uploadID: String?, location: S3Location) -> String {
        let upload = uploadID.map { "upload \($0)" } ?? "the upload"
        switch completion {
        case .completed(let eTag):
            return " while the server completed \(upload), which it finished: \(location) is stored (ETag \(eTag))"
        case .mayHaveCompleted:
            return
                " while the server completed \(upload), which is no longer there and \(location) does not show it: it may have completed; check the object before uploading again"
        }
    }

    /// What a directory given without `--recursive` is told.
    static let directoryHint = " (--recursive sends a directory and all below it)"

    /// The option that changes what the library's message asks for, if there is one.
    static func flagHint(for error: S3Error) -> String {
        if case .isDirectory = error.underlying as? ByteSourceError { return directoryHint }
        switch error.code {
        case .tooManyParts: return " (--part-size)"
        case .sourceChanged where error.uploadID == nil: return ""  // a PutObject: nothing stored to restart
        case .stateDirectory: return " (--state)"
        case .sourceChanged, .state: return " (--restart)"
        case .server where ["PermanentRedirect", "AuthorizationHeaderMalformed"].contains(error.serverCode ?? ""): return " (--region)"
        default: return ""
        }
    }
}

/// `sluice s3 abort s3://BUCKET/KEY [--upload-id ID]`: removes multipart uploads in progress.
struct S3AbortCommand {
    static let specification = CommandSpec(
        path: ["s3", "abort"],
        synopses: [Synopsis("s3://BUCKET/KEY [--upload-id ID] [options]", "abort S3 multipart uploads in progress")],
        about: "without --upload-id, every multipart upload of exactly that key is aborted",
        operands: [OperandSpec("s3://BUCKET/KEY")],
        options: S3CommonOptions.options.map(\.spec) + options.map(\.spec))

    /// What the options set.
    struct Settings {
        var uploadID: String?
        /// `--state`: where the records to forget are.
        var stateDirectory: String?
    }

    /// Every option of `s3 abort` but the common ones, declared once.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("--upload-id", value: "ID", help: "the upload to abort")) { $0.uploadID = $1 },
            Option(OptionSpec("--state", value: "DIR", completion: .directory, help: "resume records to forget (default ~/.cache/sluice/s3)")) {
                guard !$1.isEmpty else { throw UsageError("--state needs a directory") }
                $0.stateDirectory = $1
            },
        ]
    }

    var location: S3Location
    var uploadID: String?
    var common: S3CommonOptions
    /// `--state`: where the records to forget are.
    var stateDirectory: String?

    init(arguments: [String]) throws {
        var settings = Settings()
        let parsed = try S3Arguments(arguments, command: Self.specification, options: Self.options, into: &settings)
        let (uploadID, stateDirectory) = (settings.uploadID, settings.stateDirectory)
        guard parsed.positionals.count == 1 else { throw UsageError("s3 abort needs s3://BUCKET/KEY") }
        location = try parsed.location(at: 0, keyFor: "s3 abort")
        self.uploadID = uploadID
        self.stateDirectory = stateDirectory
        common = parsed.common
    }

    func run() async -> Int32 {
        do {
            let configuration = try S3Configuration.resolve(common.overrides)
            var options = S3Options()
            options.transfer = common.transfer
            options.stateDirectory = stateDirectory
            let client = S3Client(configuration: configuration, options: options)
            let aborted = try await client.abort(location, uploadID: uploadID)
            if aborted.isEmpty {
                Terminal.error("sluice: s3 abort: no multipart upload of \(location) in progress")
            }
            for id in aborted { try Terminal.output("\(id)\n") }
            if !aborted.isEmpty { Terminal.error("sluice: aborted \(counted(aborted.count, "upload")) of \(location)") }
            return 0
        } catch {
            Terminal.error("sluice: s3 abort: \(error)")
            return 1
        }
    }
}
