import Foundation
import Sluice

/// The options of `s3 cp` (and `s3 cp -r`) that say what the object carries and how it is
/// checked: `S3ObjectOptions` and the checksum choice, one description and one parser.
enum S3ObjectArguments {
    /// The object options, declared once, applied to the `S3Options` at `options` and the
    /// choices checked together later (`finish`) at `gathered`.
    static func options<Settings>(
        _ options: WritableKeyPath<Settings, S3Options>, _ gathered: WritableKeyPath<Settings, Gathered>
    ) -> [Option<Settings>] {
        func object(_ spec: OptionSpec, _ set: @escaping (inout S3ObjectOptions, String) throws -> Void) -> Option<Settings> {
            Option(spec) { try set(&$0[keyPath: options].object, $1) }
        }
        func gather(_ spec: OptionSpec, _ set: @escaping (inout Gathered, String) -> Void) -> Option<Settings> {
            Option(spec) { set(&$0[keyPath: gathered], $1) }
        }
        let checksum: (inout Settings, String) throws -> Void = { settings, value in
            if value == "none" {
                settings[keyPath: options].checksum = nil
            } else {
                guard let algorithm = ChecksumAlgorithm(name: value) else {
                    throw UsageError("unknown checksum '\(value)': use crc64nvme, crc32c, crc32, sha1, sha256 or none")
                }
                settings[keyPath: options].checksum = algorithm
            }
        }
        return [
            Option(.choice("--checksum-algorithm", among: algorithmNames, help: "the checksum sent with every part and verified (default crc32c)"), checksum),
            Option(.choice("--checksum", among: algorithmNames, help: "the same as --checksum-algorithm (s3 cp, s3 presign; not s3 sync)"), checksum),
            Option(
                .choice(
                    "--checksum-type", among: ["full-object", "composite"],
                    help: "a multipart object's checksum: of the whole object (CRCs; crc64nvme's only) or of the parts'")
            ) {
                guard let type = S3ChecksumType(name: $1) else { throw UsageError("--checksum-type is full-object or composite, not '\($1)'") }
                $0[keyPath: options].checksumType = type
            },
            object(OptionSpec("--content-type", value: "T", help: "the object's Content-Type (default: guessed from the file's name as the AWS CLI does)")) {
                $0.contentType = $1
            },
            gather(OptionSpec("--no-guess-mime-type", help: "send no Content-Type unless --content-type gives one")) { gathered, _ in
                gathered.guessesContentType = false
            },
            object(OptionSpec("--cache-control", value: "V", help: "the object's Cache-Control")) { $0.cacheControl = $1 },
            object(OptionSpec("--content-disposition", value: "V", help: "the object's Content-Disposition")) { $0.contentDisposition = $1 },
            object(OptionSpec("--content-encoding", value: "V", help: "the object's Content-Encoding")) { $0.contentEncoding = $1 },
            object(OptionSpec("--content-language", value: "V", help: "the object's Content-Language")) { $0.contentLanguage = $1 },
            object(OptionSpec("--expires", value: "DATE", help: "the object's Expires (ISO 8601, e.g. 2030-01-31T12:00:00Z)")) {
                $0.expires = try date($1, option: "--expires")
            },
            object(OptionSpec("--metadata", value: "KEY=VALUE", help: "user metadata (x-amz-meta-KEY), repeatable; ASCII, 2 KB in all")) {
                $0.metadata.append(try pair($1, option: "--metadata"))
            },
            object(OptionSpec("--storage-class", value: "C", help: "the object's storage class")) { $0.storageClass = $1 },
            gather(.choice("--sse", among: ["AES256", "aws:kms", "aws:kms:dsse"], help: "server-side encryption")) { $0.sse = $1 },
            gather(OptionSpec("--sse-kms-key-id", value: "ID", help: "with --sse aws:kms: the KMS key (id, ARN, alias)")) {
                $0.kms.keyID = $1
                $0.kmsGiven = true
            },
            gather(OptionSpec("--sse-kms-context", value: "B64", help: "with --sse aws:kms: the encryption context (base64 JSON)")) {
                $0.kms.context = $1
                $0.kmsGiven = true
            },
            gather(OptionSpec("--bucket-key-enabled", help: "with --sse aws:kms: use the bucket's S3 Bucket Key")) { gathered, _ in
                gathered.kms.bucketKey = true
                gathered.kmsGiven = true
            },
            gather(.choice("--sse-c", among: ["AES256"], help: "SSE-C with the key of --sse-c-key-file or $SLUICE_SSE_C_KEY_FILE")) { gathered, _ in
                gathered.customerKey = true
            },
            gather(OptionSpec("--sse-c-key-file", value: "PATH", completion: .file, help: "the 32-byte SSE-C key (never printed or stored)")) {
                $0.customerKeyFile = $1
            },
            object(OptionSpec("--tag", value: "KEY=VALUE", help: "an object tag, repeatable (10 at most)")) { $0.tags.append(try pair($1, option: "--tag")) },
            object(OptionSpec("--acl", value: "CANNED", help: "a canned ACL: \(S3ObjectOptions.cannedACLs.joined(separator: ", "))")) { $0.acl = $1 },
            object(OptionSpec("--expected-bucket-owner", value: "ID", help: "the 12-digit account the bucket must belong to")) {
                $0.expectedBucketOwner = $1
            },
            object(.choice("--object-lock-mode", among: ["GOVERNANCE", "COMPLIANCE"], help: "with --object-lock-retain-until")) { $0.objectLockMode = $1 },
            object(OptionSpec("--object-lock-retain-until", value: "DATE", help: "ISO 8601, with --object-lock-mode")) {
                $0.objectLockRetainUntil = try date($1, option: "--object-lock-retain-until")
            },
            object(.choice("--object-lock-legal-hold", among: ["ON", "OFF"], help: "the object's legal hold")) { $0.objectLockLegalHold = $1 == "ON" },
            gather(OptionSpec("--no-clobber", help: "write only if no object has the key (If-None-Match: *)")) { gathered, _ in gathered.noClobber = true },
            gather(OptionSpec("--if-match", value: "ETAG", help: "overwrite only the object with this ETag")) { $0.ifMatch = $1 },
        ]
    }

    /// What `--checksum-algorithm` takes.
    static let algorithmNames = ["crc64nvme", "crc32c", "crc32", "sha1", "sha256", "none"]

    /// What the options gathered, checked together by `finish`.
    struct Gathered {
        var sse: String?
        var kms = S3KMSEncryption()
        var kmsGiven = false
        var customerKey = false
        var customerKeyFile: String?
        var noClobber = false
        var ifMatch: String?
        var guessesContentType = true
    }

    /// Checks the options together and completes `options` (encryption, condition), then
    /// `S3Options.validate`: every refusal is a usage error (exit 2), before any request.
    static func finish(_ gathered: Gathered, _ options: inout S3Options, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        if gathered.noClobber, gathered.ifMatch != nil { throw UsageError("--no-clobber and --if-match exclude each other") }
        options.object.condition = gathered.noClobber ? .noClobber : gathered.ifMatch.map(S3WriteCondition.ifMatch)
        options.object.guessesContentType = gathered.guessesContentType
        let keyFile = gathered.customerKeyFile ?? environment["SLUICE_SSE_C_KEY_FILE"]
        if gathered.customerKey {
            guard gathered.sse == nil else { throw UsageError("--sse-c and --sse exclude each other") }
            guard let keyFile else { throw UsageError("--sse-c needs --sse-c-key-file PATH (or SLUICE_SSE_C_KEY_FILE)") }
            options.object.encryption = .customerKey(try customerKey(file: keyFile))
        } else if gathered.customerKeyFile != nil {
            throw UsageError("--sse-c-key-file goes with --sse-c AES256")
        }
        switch gathered.sse {
        case "AES256"?:
            if gathered.kmsGiven { throw UsageError("--sse-kms-key-id, --sse-kms-context and --bucket-key-enabled go with --sse aws:kms") }
            options.object.encryption = .s3
        case let sse?:
            var kms = gathered.kms
            kms.dualLayer = sse == "aws:kms:dsse"
            options.object.encryption = .kms(kms)
        case nil:
            if gathered.kmsGiven { throw UsageError("--sse-kms-key-id, --sse-kms-context and --bucket-key-enabled go with --sse aws:kms") }
        }
        do { try options.validate() } catch { throw UsageError(error.message) }
    }

    /// The SSE-C key in the file at `path`: exactly 32 bytes, read without waiting (a FIFO, a
    /// device or a directory is refused, not opened for reading) and never more than 32 bytes
    /// (a /proc file or one that grows stops there).
    ///
    /// - Throws: `UsageError` naming the file and what is wrong, never its bytes.
    static func customerKey(file path: String) throws -> S3CustomerKey {
        let bytes: [UInt8]?
        do { bytes = try SmallFile.read(path, limit: 32) } catch {
            if case .tooLarge = error { throw UsageError("the SSE-C key file \(path) holds more than 32 bytes: an SSE-C key is 32 bytes (AES-256)") }
            throw UsageError("cannot read the SSE-C key file \(path): \(error)")
        }
        guard let bytes else { throw UsageError("cannot read the SSE-C key file \(path): no such file") }
        do { return try S3CustomerKey(bytes) } catch { throw UsageError("\(error.message) (\(path))") }
    }

    /// `KEY=VALUE`.
    static func pair(_ value: String, option: String) throws -> S3Pair {
        guard let equals = value.firstIndex(of: "="), equals != value.startIndex else { throw UsageError("\(option) needs KEY=VALUE") }
        return S3Pair(String(value[..<equals]), String(value[value.index(after: equals)...]))
    }

    /// An ISO 8601 date and time (`2030-01-31T12:00:00Z`, `.123` seconds allowed, `Z` or an
    /// offset up to ±14:00) or a date (`2030-01-31`, midnight UTC), each field in its range
    /// (no 25th hour, no February 30th) and a four-digit year from 0001: what an HTTP date and
    /// S3's retain-until date can say.
    static func date(_ value: String, option: String) throws -> Date {
        let bad = UsageError("\(option) needs an ISO 8601 date, e.g. 2030-01-31T12:00:00Z or 2030-01-31, not '\(value.controlCharactersEscaped)'")
        let pattern = /([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,9})?(Z|([+-])([0-9]{2}):([0-9]{2})))?/
        guard let match = value.wholeMatch(of: pattern) else { throw bad }
        let number = { (text: Substring?) in text.flatMap { Int($0) } ?? 0 }
        var offset = 0
        if let sign = match.8 {
            let (hours, minutes) = (number(match.9), number(match.10))
            guard hours <= 14, minutes <= 59 else { throw bad }
            offset = (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
        }
        var calendar = Calendar(identifier: .gregorian)
        guard let zone = TimeZone(secondsFromGMT: offset) else { throw bad }
        calendar.timeZone = zone
        let components = DateComponents(
            calendar: calendar, timeZone: zone, year: number(match.1), month: number(match.2), day: number(match.3), hour: number(match.4),
            minute: number(match.5), second: number(match.6))
        guard components.year! >= 1, (0...23).contains(components.hour!), (0...59).contains(components.minute!),
            (0...59).contains(components.second!), components.isValidDate(in: calendar), let date = calendar.date(from: components)
        else { throw bad }
        return date
    }
}
