import Foundation
import SluiceByteSources

/// One part as a client reports it to its backend once S3 accepted it.
public struct S3PartETag: Codable, Sendable, Equatable {
    /// The part's number, from 1.
    public var partNumber: Int
    /// The ETag S3 answered, quotes included.
    public var eTag: String
    /// The part's checksum in the upload's algorithm (base64, as S3 writes it), if it has one.
    public var checksum: String?

    /// A part S3 accepted with `eTag`, and the checksum the client computed.
    public init(partNumber: Int, eTag: String, checksum: String? = nil) {
        self.partNumber = partNumber
        self.eTag = eTag
        self.checksum = checksum
    }

    /// The part as `CompleteMultipartUpload` names it, its checksum under `algorithm`.
    public func completedPart(algorithm: ChecksumAlgorithm?) -> S3CompletedPart {
        var checksums: [ChecksumAlgorithm: String] = [:]
        if let algorithm, let checksum { checksums[algorithm] = checksum }
        return S3CompletedPart(partNumber: partNumber, eTag: eTag, checksums: checksums)
    }
}

/// A presigned multipart upload as a document (`sluice s3 presign --multipart`, `plan.json`):
/// the upload id, the part size and, per part, its number, byte range and URL. A backend
/// writes it (`S3Client.presignedPlan`); a client with no credentials sends a source by it
/// (`upload(_:)`, `sluice upload --parts`).
public struct S3PresignedPlan: Codable, Sendable, Equatable {
    /// One part: where it is in the source and where it goes.
    public struct Part: Codable, Sendable, Equatable {
        /// The part's number, from 1.
        public var partNumber: Int
        /// Where the part starts in the source.
        public var offset: Int64
        /// The part's length in bytes.
        public var length: Int64
        /// The presigned `UploadPart` URL.
        public var url: String
        /// Headers signed with the URL, to send with it; absent when only `Host` is signed.
        public var headers: [String: String]?

        /// A part of the plan.
        public init(partNumber: Int, offset: Int64, length: Int64, url: String, headers: [String: String]? = nil) {
            self.partNumber = partNumber
            self.offset = offset
            self.length = length
            self.url = url
            self.headers = headers
        }
    }

    /// The format this sluice writes and reads.
    public static let currentVersion = 1

    /// The format; a plan of another version is refused.
    public var version: Int
    /// The upload: its object, id, size, part size and checksum algorithm.
    public var upload: S3PresignedUpload
    /// Every part, numbered 1 … N in order.
    public var parts: [Part]

    /// A plan for `upload` with these parts.
    public init(upload: S3PresignedUpload, parts: [Part]) {
        self.version = Self.currentVersion
        self.upload = upload
        self.parts = parts
    }

    /// Checks that the plan is one a backend makes: parts 1 ... N in order, each where the
    /// part size puts it, every URL for this object's `UploadPart` of this upload and part,
    /// all to one place. A plan edited by hand fails here, before any byte is sent.
    ///
    /// - Throws: `S3Error` with code `.invalidOption`, naming the first thing wrong.
    public func validate() throws {
        func invalid(_ reason: String) -> S3Error { S3Error(.invalidOption, "the plan for \(upload.location) \(reason)") }
        guard version == Self.currentVersion else { throw invalid("is format version \(version); this sluice reads \(Self.currentVersion)") }
        let count = upload.partCount
        guard parts.count == count else {
            throw invalid("lists \(parts.count) parts; \(upload.size) bytes in parts of \(upload.plan.partSize) are \(count)")
        }
        typealias Target = (host: String?, port: Int?, path: String)
        func show(_ target: Target) -> String { "\(target.host ?? "")\(target.port.map { ":\($0)" } ?? "")\(target.path)" }
        var first: (scheme: String?, target: Target)?
        let (bucket, key) = (upload.location.bucket, upload.location.key)
        for (index, part) in parts.enumerated() {
            let number = index + 1
            let range = upload.plan.range(ofPart: number)
            guard part.partNumber == number else { throw invalid("lists part \(part.partNumber) where part \(number) belongs") }
            guard part.offset == range.lowerBound, part.length == Int64(range.count) else {
                throw invalid("has part \(number) at bytes \(part.offset)+\(part.length); the part size puts it at \(range.lowerBound)+\(range.count)")
            }
            guard let components = URLComponents(string: part.url), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
                let host = components.host?.lowercased(), !host.isEmpty
            else { throw invalid("has no http(s) URL for part \(number)") }
            let presigned = S3PresignedURL(url: part.url)
            guard presigned.queryValue("partNumber") == "\(number)", presigned.queryValue("uploadId") == upload.uploadID else {
                throw invalid("has a URL for part \(number) that is not UploadPart of part \(number) of upload \(upload.uploadID)")
            }
            let here: Target = (host, components.port, components.path)
            if let first, first.scheme != components.scheme?.lowercased() || first.target != here {
                throw invalid("has a URL for part \(number) to \(show(here)), part 1's goes to \(show(first.target))")
            }
            first = (components.scheme?.lowercased(), here)
            let virtualHost = host.hasPrefix(bucket.lowercased() + ".")
            guard components.path.hasSuffix("/\(bucket)/\(key)") || (virtualHost && components.path.hasSuffix("/\(key)")) else {
                throw invalid("has a URL for part \(number) to \(components.path), not to this object")
            }
        }
    }

    /// The upload of `source` by this plan: each part goes to the plan's URL (a plan's URLs
    /// cannot be renewed: an expired one fails the part), with the plan's headers and, for an
    /// SSE-C upload, `customerKey`'s.
    ///
    /// - Throws: `S3Error`: `.invalidOption` for a plan that does not validate or an SSE-C key
    ///   that is not the plan's (missing, another, or one for a plan without SSE-C),
    ///   `.sourceChanged` for a source whose length is not the plan's size (before any byte is sent).
    public func upload(_ source: S3Source, customerKey: S3CustomerKey? = nil) throws -> S3PresignedPartsUpload {
        try validate()
        switch (upload.customerKeyMD5, customerKey) {
        case (nil, nil): break
        case (nil, _?): throw S3Error(.invalidOption, "the plan for \(upload.location) has no SSE-C key; its parts carry none")
        case (_?, nil): throw S3Error(.invalidOption, "the plan for \(upload.location) is for an SSE-C upload: its parts need the key")
        case (let md5?, let key?):
            guard key.md5Base64 == md5 else {
                throw S3Error(.invalidOption, "the SSE-C key given is not the one of the plan for \(upload.location) (its MD5 is \(md5))")
            }
        }
        guard source.bytes.length == upload.size else {
            throw S3Error(.sourceChanged, "the source has \(source.bytes.length) bytes; the plan for \(upload.location) is for \(upload.size) bytes")
        }
        let parts = self.parts
        var presigned = try S3PresignedPartsUpload(
            uploadID: upload.uploadID, source: source, partSize: upload.plan.partSize,
            checksum: upload.checksum
        ) { request in
            let part = parts[request.partNumber - 1]
            return S3PresignedURL(url: part.url, headers: part.headers ?? [:])
        }
        presigned.customerKey = customerKey
        return presigned
    }
}

/// What a client hands its backend after a presigned-parts upload (`sluice upload --parts`,
/// `etags.json`): the plan's identity and every part's ETag and checksum.
public struct S3PresignedPartList: Codable, Sendable, Equatable {
    /// The format (`S3PresignedPlan.currentVersion`).
    public var version: Int
    /// The upload, as the plan gave it.
    public var upload: S3PresignedUpload
    /// Every part S3 accepted, by number.
    public var parts: [S3PartETag]

    /// The list for the result of uploading by `plan`.
    public init(plan: S3PresignedPlan, result: S3PresignedPartsResult) {
        version = S3PresignedPlan.currentVersion
        upload = plan.upload
        parts = result.parts.map { part in
            S3PartETag(partNumber: part.partNumber, eTag: part.eTag, checksum: plan.upload.checksum.flatMap { part.checksums[$0] })
        }
    }

    /// The parts as `CompleteMultipartUpload` names them.
    public var completedParts: [S3CompletedPart] { parts.map { $0.completedPart(algorithm: upload.checksum) } }
}
