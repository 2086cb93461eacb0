import Foundation
import SluicePrimitives

/// What an uploaded object carries besides its bytes: its attributes, encryption, tags, ACL,
/// object lock and the condition it is written under. One value, turned into the headers of
/// each request that needs them (`headers(for:)`): `PutObject`, `CreateMultipartUpload`,
/// `UploadPart` (SSE-C on every part) and `CompleteMultipartUpload` (conditions, SSE-C).
///
/// The header names and forms are botocore's for the same call (`S3ObjectOptionsTests`
/// compares them).
public struct S3ObjectOptions: Sendable, Equatable {
    /// `Content-Type`.
    public var contentType: String?
    /// Without a `contentType`, guess it from the source file's name as the AWS CLI does
    /// (`MediaTypeTable`; see `forFile(atPath:)`). The command line's default; off here, as
    /// in the AWS SDKs, which send none.
    public var guessesContentType = false
    /// `Cache-Control`.
    public var cacheControl: String?
    /// `Content-Disposition`.
    public var contentDisposition: String?
    /// `Content-Encoding`.
    public var contentEncoding: String?
    /// `Content-Language`.
    public var contentLanguage: String?
    /// `Expires`, sent as an HTTP date.
    public var expires: Date?
    /// `x-amz-meta-KEY: VALUE`, in order.
    public var metadata: [S3Pair] = []
    /// `x-amz-storage-class`.
    public var storageClass: String?
    /// Server-side encryption.
    public var encryption: S3Encryption?
    /// `x-amz-tagging`, in order.
    public var tags: [S3Pair] = []
    /// `x-amz-acl`: one of `S3ObjectOptions.cannedACLs`.
    public var acl: String?
    /// `x-amz-expected-bucket-owner`: the 12-digit account the bucket must belong to.
    public var expectedBucketOwner: String?
    /// `x-amz-object-lock-mode`: `GOVERNANCE` or `COMPLIANCE` (with `objectLockRetainUntil`).
    public var objectLockMode: String?
    /// `x-amz-object-lock-retain-until-date`.
    public var objectLockRetainUntil: Date?
    /// `x-amz-object-lock-legal-hold`: true for `ON`, false for `OFF`.
    public var objectLockLegalHold: Bool?
    /// The condition the object is written under (`PutObject`, `CompleteMultipartUpload`).
    public var condition: S3WriteCondition?
    /// With an object as the source (`S3Client.copy`): whether the copy takes the source's
    /// content type, `Cache-Control`, `Content-Disposition`, `Content-Encoding`,
    /// `Content-Language`, `Expires` and user metadata (`.copy`) or these options' (`.replace`).
    /// Nil: `.replace` when `metadata` is given, else `.copy` (the AWS CLI's rule for
    /// `--metadata`). Encryption, storage class, tags, ACL and object lock are these options'
    /// either way.
    public var metadataDirective: S3MetadataDirective?

    /// Options with every property at its default (given with each property).
    public init() {}

    /// These options for the object made from the file at `path`: `contentType` guessed from
    /// the file's name (`MediaTypeTable.system`) when none is given and `guessesContentType`
    /// is set, else as they are. The one place an object's content type is decided.
    public func forFile(atPath path: String) -> S3ObjectOptions {
        guard guessesFromFileNames else { return self }
        var options = self
        options.contentType = MediaTypeTable.system.contentType(forPath: path)
        return options
    }

    /// Whether `forFile(atPath:)` guesses a file's content type from its name: no type is
    /// given and `guessesContentType` is set.
    package var guessesFromFileNames: Bool { contentType == nil && guessesContentType }

    /// The directive a copy follows: `metadataDirective`, else the AWS CLI's default.
    public var effectiveMetadataDirective: S3MetadataDirective {
        metadataDirective ?? (metadata.isEmpty ? .copy : .replace)
    }

    /// The options of an object copied from the one `head` describes, whose key is `key`: with
    /// `.copy`, its content type, other attributes and user metadata in place of these
    /// options'; with `.replace`, these options, the content type guessed from `key` when none
    /// is given and `guessesContentType` is set (as the AWS CLI guesses it from the source's
    /// key). The one place a copy's attributes are decided (a `CopyObject` with `.copy` sends
    /// none and is told to copy them).
    public func copied(from head: S3ObjectHead, key: String) -> S3ObjectOptions {
        guard effectiveMetadataDirective == .copy else { return forFile(atPath: key) }
        var options = withoutAttributes
        options.contentType = head.contentType
        options.cacheControl = head.attributes.cacheControl
        options.contentDisposition = head.attributes.contentDisposition
        options.contentEncoding = head.attributes.contentEncoding
        options.contentLanguage = head.attributes.contentLanguage
        options.expires = head.attributes.expires
        options.metadata = head.metadata.map { S3Pair($0.name, $0.value) }
        return options
    }

    /// These options without content type, attributes and metadata: what a `CopyObject` with
    /// the `COPY` directive sends (the store keeps the source's).
    package var withoutAttributes: S3ObjectOptions {
        var options = self
        options.contentType = nil
        options.guessesContentType = false
        options.cacheControl = nil
        options.contentDisposition = nil
        options.contentEncoding = nil
        options.contentLanguage = nil
        options.expires = nil
        options.metadata = []
        return options
    }

    /// The SSE-C key, when the object is encrypted with one.
    public var customerKey: S3CustomerKey? {
        if case .customerKey(let key)? = encryption { return key }
        return nil
    }

    /// S3's canned ACLs for objects.
    public static let cannedACLs = [
        "private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read",
        "bucket-owner-read", "bucket-owner-full-control",
    ]
    /// S3's limit on user metadata: the UTF-8 bytes of every key and value together.
    public static let metadataLimit = 2048
    /// S3's limits on object tags: how many, and the characters of a key and of a value.
    public static let tagLimit = (count: 10, key: 128, value: 256)

    /// The requests an object's headers go on.
    public enum Operation: Sendable {
        /// `PutObject`, `CreateMultipartUpload`, `UploadPart` and `CompleteMultipartUpload`: each
        /// carries the headers S3 reads on it.
        case putObject, createMultipartUpload, uploadPart, completeMultipartUpload
    }

    /// The headers `operation` carries for these options (signed with the request).
    public func headers(for operation: Operation) -> [SigV4Header] {
        var headers: [SigV4Header] = []
        func add(_ name: String, _ value: String?) {
            if let value { headers.append(SigV4Header(name, value)) }
        }
        let whole = operation == .putObject || operation == .createMultipartUpload
        if whole {
            add("Content-Type", contentType)
            add("Cache-Control", cacheControl)
            add("Content-Disposition", contentDisposition)
            add("Content-Encoding", contentEncoding)
            add("Content-Language", contentLanguage)
            add("Expires", expires.map(Self.httpDate))
            for pair in metadata { add("x-amz-meta-\(pair.key)", pair.value) }
            add("x-amz-storage-class", storageClass)
            add("x-amz-acl", acl)
            if !tags.isEmpty { add("x-amz-tagging", tags.map { "\(Self.tagEncoded($0.key))=\(Self.tagEncoded($0.value))" }.joined(separator: "&")) }
            add("x-amz-object-lock-mode", objectLockMode)
            add("x-amz-object-lock-retain-until-date", objectLockRetainUntil.map(Self.isoDate))
            add("x-amz-object-lock-legal-hold", objectLockLegalHold.map { $0 ? "ON" : "OFF" })
            switch encryption {
            case .s3?: add("x-amz-server-side-encryption", "AES256")
            case .kms(let kms)?:
                add("x-amz-server-side-encryption", kms.dualLayer ? "aws:kms:dsse" : "aws:kms")
                add("x-amz-server-side-encryption-aws-kms-key-id", kms.keyID)
                add("x-amz-server-side-encryption-context", kms.context)
                if kms.bucketKey { add("x-amz-server-side-encryption-bucket-key-enabled", "true") }
            case .customerKey?, nil: break
            }
        }
        if case .customerKey(let key)? = encryption { headers += key.headers }
        add("x-amz-expected-bucket-owner", expectedBucketOwner)
        if operation == .putObject || operation == .completeMultipartUpload {
            switch condition {
            case .noClobber?: add("If-None-Match", "*")
            case .ifMatch(let eTag)?: add("If-Match", eTag)
            case nil: break
            }
        }
        return headers
    }

    /// Checks every option against S3's rules before anything is sent.
    ///
    /// - Throws: `S3Error.invalidOption`, one line naming the option.
    public func validate() throws(S3Error) {
        /// `text` quoted for a one-line message.
        func shown(_ text: String) -> String { "'\(text.controlCharactersEscaped)'" }
        var metadataBytes = 0
        for pair in metadata {
            guard !pair.key.isEmpty, pair.key.utf8.allSatisfy(Self.isTokenByte) else {
                throw S3Error(.invalidOption, "metadata key \(shown(pair.key)) must be non-empty ASCII letters, digits or !#$%&'*+-.^_`|~")
            }
            guard pair.value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw S3Error(
                    .invalidOption,
                    "metadata value of \(shown(pair.key)) is not printable ASCII: S3 would keep it RFC 2047-encoded (=?UTF-8?B?...?=), not as given; encode it yourself"
                )
            }
            metadataBytes += pair.key.utf8.count + pair.value.utf8.count
        }
        guard metadataBytes <= Self.metadataLimit else {
            throw S3Error(.invalidOption, "metadata is \(metadataBytes) bytes (keys and values): S3 allows \(Self.metadataLimit)")
        }
        guard tags.count <= Self.tagLimit.count else {
            throw S3Error(.invalidOption, "\(tags.count) tags: S3 allows \(Self.tagLimit.count) per object")
        }
        var tagKeys: Set<String> = []
        for tag in tags {
            guard !tag.key.isEmpty, tag.key.count <= Self.tagLimit.key else {
                throw S3Error(.invalidOption, "tag key \(shown(tag.key)) must be 1 ... \(Self.tagLimit.key) characters")
            }
            guard tag.value.count <= Self.tagLimit.value else {
                throw S3Error(.invalidOption, "tag value of \(shown(tag.key)) is \(tag.value.count) characters: S3 allows \(Self.tagLimit.value)")
            }
            guard (tag.key + tag.value).unicodeScalars.allSatisfy(Self.isTagCharacter) else {
                throw S3Error(
                    .invalidOption, "tag \(shown(tag.key + "=" + tag.value)): S3 allows letters, digits, spaces and + - = . _ : / @ in tag keys and values")
            }
            guard !tag.key.lowercased().hasPrefix("aws:") else {
                throw S3Error(.invalidOption, "tag key \(shown(tag.key)): keys beginning with aws: are reserved for AWS")
            }
            guard tagKeys.insert(tag.key).inserted else { throw S3Error(.invalidOption, "tag key \(shown(tag.key)) given twice") }
        }
        if let acl, !Self.cannedACLs.contains(acl) {
            throw S3Error(.invalidOption, "ACL \(shown(acl)) is not one of S3's canned ACLs: \(Self.cannedACLs.joined(separator: ", "))")
        }
        if let owner = expectedBucketOwner, owner.count != 12 || !owner.allSatisfy(\.isASCII) || !owner.allSatisfy(\.isNumber) {
            throw S3Error(.invalidOption, "expected bucket owner \(shown(owner)) is not a 12-digit account id")
        }
        if let mode = objectLockMode, mode != "GOVERNANCE", mode != "COMPLIANCE" {
            throw S3Error(.invalidOption, "object lock mode \(shown(mode)) is not GOVERNANCE or COMPLIANCE")
        }
        if (objectLockMode == nil) != (objectLockRetainUntil == nil) {
            throw S3Error(.invalidOption, "object lock mode and retain-until date go together: give both or neither")
        }
        if case .kms(let kms)? = encryption, let context = kms.context {
            guard let data = Data(base64Encoded: context), (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
                throw S3Error(.invalidOption, "SSE-KMS encryption context must be the base64 of a JSON object")
            }
        }
        if case .ifMatch(let eTag)? = condition, eTag.isEmpty || eTag.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F }) {
            throw S3Error(.invalidOption, "If-Match ETag \(shown(eTag)) must be non-empty printable ASCII")
        }
        for (name, value) in [
            ("Content-Type", contentType), ("Cache-Control", cacheControl), ("Content-Disposition", contentDisposition),
            ("Content-Encoding", contentEncoding), ("Content-Language", contentLanguage), ("storage class", storageClass),
        ] {
            if let value, value.isEmpty || value.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F }) {
                throw S3Error(.invalidOption, "\(name) \(shown(value)) must be non-empty printable ASCII")
            }
        }
    }

    /// RFC 7231's HTTP date (`Thu, 01 Dec 2033 16:00:00 GMT`), as botocore sends `Expires`.
    package static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// The date an HTTP date names (`Thu, 01 Dec 2033 16:00:00 GMT`), or nil.
    package static func httpDate(parsing text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    /// ISO 8601 in UTC (`2033-12-01T16:00:00Z`), as botocore sends the retain-until date.
    package static func isoDate(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// A tag key or value in `x-amz-tagging` (form-encoded: RFC 3986's unreserved characters kept).
    package static func tagEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? text
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A character S3 allows in a tag key or value: a letter, a digit, a space (Unicode's L,
    /// N and Z) or one of `+ - = . _ : / @`.
    private static func isTagCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .decimalNumber, .letterNumber,
            .otherNumber, .spaceSeparator, .lineSeparator, .paragraphSeparator:
            return true
        default: return "+-=._:/@".unicodeScalars.contains(scalar)
        }
    }

    /// An RFC 7230 token character (a header name's).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}

/// `x-amz-metadata-directive`: what an object copied from another takes (`S3ObjectOptions.metadataDirective`).
public enum S3MetadataDirective: String, Sendable, Equatable, CaseIterable {
    /// The source's content type, attributes and user metadata.
    case copy = "COPY"
    /// Those of the options given.
    case replace = "REPLACE"
}

/// A key and its value (metadata, tags).
public struct S3Pair: Sendable, Equatable {
    /// The key: a metadata name (sent as `x-amz-meta-KEY`) or a tag's key.
    public var key: String
    /// The value.
    public var value: String

    /// The pair `key`, `value`.
    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// Server-side encryption of an object.
public enum S3Encryption: Sendable, Equatable {
    /// SSE-S3 (`AES256`): keys S3 manages.
    case s3
    /// SSE-KMS (`aws:kms`) or DSSE-KMS (`aws:kms:dsse`).
    case kms(S3KMSEncryption)
    /// SSE-C: a key the caller holds, sent with every request that writes the object.
    case customerKey(S3CustomerKey)
}

/// SSE-KMS settings.
public struct S3KMSEncryption: Sendable, Equatable {
    /// `aws:kms:dsse` (two layers) instead of `aws:kms`.
    public var dualLayer = false
    /// The KMS key (id, ARN or alias); nil for the account's default `aws/s3` key.
    public var keyID: String?
    /// The encryption context: base64 of a JSON object.
    public var context: String?
    /// Use the bucket's S3 Bucket Key.
    public var bucketKey = false

    /// SSE-KMS settings: each argument as the property of the same name.
    public init(dualLayer: Bool = false, keyID: String? = nil, context: String? = nil, bucketKey: Bool = false) {
        self.dualLayer = dualLayer
        self.keyID = keyID
        self.context = context
        self.bucketKey = bucketKey
    }
}

/// An SSE-C key: 32 bytes of AES-256 key. Its description never shows the key.
public struct S3CustomerKey: Sendable, Equatable, CustomStringConvertible {
    private let key: [UInt8]

    /// - Throws: `S3Error.invalidOption` unless `key` is 32 bytes.
    public init(_ key: [UInt8]) throws(S3Error) {
        guard key.count == 32 else {
            throw S3Error(.invalidOption, "an SSE-C key is 32 bytes (AES-256), not \(key.count)")
        }
        self.key = key
        // A gateway's error message may echo the headers: the key is hidden in every line.
        Redaction.register(Data(key).base64EncodedString())
        if let raw = String(validating: key, as: UTF8.self) { Redaction.register(raw) }
    }

    /// The key as sent (`x-amz-server-side-encryption-customer-key`).
    package var base64: String { Data(key).base64EncodedString() }

    /// The header that carries the key itself: signed in a presigned URL, never written in a
    /// plan (the client adds it from its own copy of the key).
    public static let keyHeader = "x-amz-server-side-encryption-customer-key"

    /// The three headers every request that writes or reads the object carries: the algorithm,
    /// the key and its MD5.
    package var headers: [SigV4Header] {
        [
            SigV4Header("x-amz-server-side-encryption-customer-algorithm", "AES256"), SigV4Header(Self.keyHeader, base64),
            SigV4Header("x-amz-server-side-encryption-customer-key-MD5", md5Base64),
        ]
    }

    /// The key's MD5 as sent (`x-amz-server-side-encryption-customer-key-MD5`): what a plan
    /// keeps to know the key the parts must carry (S3 returns it in every answer; it is not the key).
    public var md5Base64: String {
        let digest = Digest(.md5)
        digest.update(key)
        return Data(digest.finalize()).base64EncodedString()
    }

    /// What a record keeps to know the key again without holding it: HMAC-SHA256 under the
    /// key of a fixed label, hex (a resume with another key is refused before a byte is sent).
    public var fingerprint: String {
        SigningCrypto.hmacSHA256(key: key, "sluice SSE-C key fingerprint").prefix(16).hexString
    }

    public var description: String { "SSE-C key \(fingerprint)" }
}

/// The condition an object is written under.
public enum S3WriteCondition: Sendable, Equatable {
    /// `If-None-Match: *`: only if no object has the key (`--no-clobber`).
    case noClobber
    /// `If-Match: ETAG`: only over the object with this ETag.
    case ifMatch(String)
}
