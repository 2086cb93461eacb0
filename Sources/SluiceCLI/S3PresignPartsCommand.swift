import Foundation
import Sluice

/// `sluice s3 presign s3://BUCKET/KEY --multipart --size BYTES`: the backend half of a
/// presigned multipart upload. Creates the upload and prints its plan (`plan.json`): the
/// upload id, the part size and, per part, its byte range and presigned `UploadPart` URL.
struct S3PresignPartsCommand {
    static let specification = CommandSpec(
        path: ["s3", "presign"],
        selector: "--multipart",
        synopses: [
            Synopsis("s3://BUCKET/KEY --multipart --size BYTES [options]   > plan.json", "a presigned multipart upload's plan (plan.json)")
        ],
        about: """
            Creates a multipart upload and prints its plan: the upload id, the part size and, per part,
            its number, offset, length and presigned URL. `sluice upload --parts plan.json SOURCE`
            sends a SOURCE by it without credentials; `sluice s3 complete` completes it.
            """,
        operands: [OperandSpec("s3://BUCKET/KEY")],
        options: options.map(\.spec) + S3CommonOptions.options.map(\.spec),
        notes: """
            The object options go on CreateMultipartUpload (the content type is guessed from the key's
            name); the plan says the checksum and its type, and with --sse-c the headers each part must
            carry, signed into its URL: every header but the key itself, which `upload --parts` adds
            from its own --sse-c-key-file.
            """)

    /// `s3 cp`'s object options that a plan can carry (`--expires` here is the URLs'; the
    /// conditions go on Complete, which `s3 complete` sends).
    static var objectOptions: [Option<Settings>] {
        S3ObjectArguments.options(\.options, \.gathered).filter { !["--expires", "--no-clobber", "--if-match"].contains($0.spec.name) }
    }

    /// What the options set.
    struct Settings {
        var options = S3Options()
        var size: Int64?
        var expires = 3600
        var uploadID: String?
        var gathered = S3ObjectArguments.Gathered()
    }

    /// Every option of `s3 presign --multipart` but the common ones, declared once.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("--multipart", help: "this form: a multipart upload's plan, not one URL")) { _, _ in },
            Option(OptionSpec("--size", value: "BYTES", help: "the object's length (the SOURCE must have exactly this many bytes)")) {
                $0.size = try ByteCount.parse($1)
            },
            Option(OptionSpec("--part-size", value: "SIZE", help: "default 8MiB, grown to stay within 10,000 parts")) {
                $0.options.partSize = try ByteCount.parse($1)
            },
            Option(OptionSpec.expires.with(help: "how long the URLs are valid, 1 ... 604800 (default 3600)")) { $0.expires = try Arguments.expiry($1) },
            Option(OptionSpec("--upload-id", value: "ID", help: "presign the parts of this existing upload again (new URLs), create nothing")) {
                guard !$1.isEmpty else { throw UsageError("--upload-id needs an id") }
                $0.uploadID = $1
            },
        ] + objectOptions
    }

    var location: S3Location
    var size: Int64
    var expires = 3600
    var uploadID: String?
    var common: S3CommonOptions
    var options = S3Options()

    init(arguments: [String]) throws {
        var settings = Settings()
        let parsed = try S3Arguments(arguments, command: Self.specification, options: Self.options, into: &settings)
        var options = settings.options
        let (size, expires, uploadID, gathered) = (settings.size, settings.expires, settings.uploadID, settings.gathered)
        try S3ObjectArguments.finish(gathered, &options)
        guard parsed.positionals.count == 1 else { throw UsageError("s3 presign --multipart needs exactly one s3://BUCKET/KEY") }
        location = try parsed.location(at: 0, keyFor: "s3 presign")
        // No file at the backend: the type is guessed from the key's name.
        options.object = options.object.forFile(atPath: location.key)
        guard let size else { throw UsageError("s3 presign --multipart needs --size BYTES, the object's length") }
        self.size = size
        self.expires = expires
        self.uploadID = uploadID
        common = parsed.common
        options.transfer = common.transfer
        self.options = options
    }

    func run() async -> Int32 {
        await S3PresignedDocuments.run("s3 presign") {
            let configuration: S3Configuration
            do { configuration = try S3Configuration.resolve(common.overrides) } catch { throw UsageError("\(error)") }
            guard configuration.credentials != nil else {
                throw UsageError("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use a profile")
            }
            let client = S3Client(configuration: configuration, options: options)
            let upload: S3PresignedUpload
            if let uploadID {
                upload = client.presignedUpload(location, uploadID: uploadID, plan: try S3PartPlan(length: size, partSize: options.partSize))
            } else {
                upload = try await client.createPresignedUpload(location, length: size)
            }
            try S3PresignedDocuments.write(try client.presignedPlan(upload, expires: expires))
            Terminal.error(
                "sluice: \(uploadID == nil ? "created" : "presigned") upload \(upload.uploadID) of \(location): \(upload.partCount) parts of \(upload.plan.partSize) bytes, URLs valid for \(expires) s"
            )
            return 0
        }
    }
}
