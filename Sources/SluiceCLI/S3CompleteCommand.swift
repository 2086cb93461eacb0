import Foundation
import Sluice

/// `sluice s3 complete s3://BUCKET/KEY --upload-id ID --parts etags.json`: completes a presigned
/// multipart upload from the list `sluice upload --parts` printed, after checking it against
/// the plan and against what the server holds.
struct S3CompleteCommand {
    static let specification = CommandSpec(
        path: ["s3", "complete"],
        synopses: [
            Synopsis(
                "s3://BUCKET/KEY --upload-id ID --parts etags.json [--plan plan.json] [options]",
                "complete a presigned multipart upload from the parts list")
        ],
        about: """
            Completes a presigned multipart upload from the parts list `sluice upload --parts` printed:
            the list must name exactly the plan's parts, each held by the server with that ETag and the
            plan's size for it (ListParts); then CompleteMultipartUpload, whose part count and composite
            checksum are checked. Nothing is completed when a check fails.
            """,
        operands: [OperandSpec("s3://BUCKET/KEY")],
        options: options.map(\.spec) + S3CommonOptions.options.map(\.spec))

    /// What the options set.
    struct Settings {
        var uploadID: String?
        var listPaths: [String] = []
        var planPath: String?
    }

    /// Every option of `s3 complete` but the common ones, declared once.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("--upload-id", value: "ID", help: "the upload, as the plan names it")) { $0.uploadID = $1 },
            Option(
                OptionSpec(
                    "--parts", value: "etags.json", completion: .file,
                    help: "the parts list `sluice upload --parts` printed; repeatable: the lists of several ranges (--part-numbers) are joined")
            ) { $0.listPaths.append($1) },
            Option(
                OptionSpec(
                    "--plan", value: "plan.json", completion: .file,
                    help: """
                        the plan the backend made: the list must be for this upload,
                        size and part size (else the plan as the list repeats it)
                        """)
            ) { $0.planPath = $1 },
        ]
    }

    var location: S3Location
    var uploadID: String
    var listPaths: [String]
    var planPath: String?
    var common: S3CommonOptions

    init(arguments: [String]) throws {
        var settings = Settings()
        let parsed = try S3Arguments(arguments, command: Self.specification, options: Self.options, into: &settings)
        let (uploadID, listPaths, planPath) = (settings.uploadID, settings.listPaths, settings.planPath)
        guard parsed.positionals.count == 1 else { throw UsageError("s3 complete needs exactly one s3://BUCKET/KEY") }
        location = try parsed.location(at: 0)
        guard let uploadID, !uploadID.isEmpty else { throw UsageError("s3 complete needs --upload-id ID") }
        guard !listPaths.isEmpty, !listPaths.contains("") else { throw UsageError("s3 complete needs --parts FILE, the list sluice upload --parts printed") }
        self.uploadID = uploadID
        self.listPaths = listPaths
        self.planPath = planPath
        common = parsed.common
    }

    /// The lists at `paths` as one (the ranges of several `upload --parts --part-numbers` runs),
    /// and the name to give it in messages.
    ///
    /// - Throws: `S3Error` (`.verification`) when two lists are of other uploads, or give one
    ///   part two ETags; the errors of reading a list.
    static func joined(_ paths: [String]) throws -> (S3PresignedPartList, String) {
        var joined = try S3PresignedDocuments.read(S3PresignedPartList.self, from: paths[0], what: "parts list")
        var byNumber = Dictionary(joined.parts.map { ($0.partNumber, $0) }, uniquingKeysWith: { first, _ in first })
        for path in paths.dropFirst() {
            let list = try S3PresignedDocuments.read(S3PresignedPartList.self, from: path, what: "parts list")
            guard list.upload == joined.upload else {
                throw S3Error(
                    .verification,
                    "the parts list \(path) is for upload \(list.upload.uploadID) of \(list.upload.location), not \(paths[0])'s \(joined.upload.uploadID) of \(joined.upload.location); nothing was completed"
                )
            }
            for part in list.parts {
                if let known = byNumber[part.partNumber], known != part {
                    throw S3Error(
                        .verification, "the parts lists give part \(part.partNumber) two ETags or checksums (\(path) and another); nothing was completed",
                        partNumber: part.partNumber)
                }
                byNumber[part.partNumber] = part
            }
        }
        joined.parts = byNumber.values.sorted { $0.partNumber < $1.partNumber }
        return (joined, paths.count == 1 ? paths[0] : "\(paths[0]) (and \(paths.count - 1) more)")
    }

    func run() async -> Int32 {
        await S3PresignedDocuments.run("s3 complete") {
            let (list, listPath) = try Self.joined(listPaths)
            var upload = list.upload
            if let planPath {
                upload = try S3PresignedDocuments.read(S3PresignedPlan.self, from: planPath, what: "plan").upload
                guard list.upload == upload else {
                    throw S3Error(
                        .verification,
                        "the parts list \(listPath) is for upload \(list.upload.uploadID) of \(list.upload.location) (\(list.upload.size) bytes in parts of \(list.upload.plan.partSize)), not the plan's \(upload.uploadID) of \(upload.location) (\(upload.size) bytes in parts of \(upload.plan.partSize)); nothing was completed"
                    )
                }
            }
            guard upload.location == location, upload.uploadID == uploadID else {
                throw S3Error(
                    .verification, "the parts list \(listPath) is for upload \(upload.uploadID) of \(upload.location), not \(uploadID) of \(location); nothing was completed")
            }
            let configuration: S3Configuration
            do { configuration = try S3Configuration.resolve(common.overrides) } catch { throw UsageError("\(error)") }
            var options = S3Options()
            options.transfer = common.transfer
            options.checksum = upload.checksum
            let client = S3Client(configuration: configuration, options: options)
            let result = try await client.completePresignedUpload(upload, parts: list.completedParts)
            try Terminal.output("\(result.location)\n")
            var line = "completed \(result.location): \(result.length) bytes in \(result.partCount) parts, ETag \(result.quotedETag)"
            if let checksum = result.checksum { line += ", checksum \(checksum) verified" }
            Terminal.error("sluice: \(line)")
            return 0
        }
    }
}
