import Foundation
import SluiceByteSources

extension ChecksumAlgorithm {
    /// The element name in S3's XML (`ChecksumCRC32C`).
    package var elementName: String { "Checksum\(s3Name)" }
}

/// The checksums S3 holds for a part or an object, by algorithm, base64 as S3 writes them.
public typealias S3Checksums = [ChecksumAlgorithm: String]

extension S3Checksums {
    package init(element: S3XMLElement) {
        self.init()
        for algorithm in ChecksumAlgorithm.allCases {
            if let value = element.value(algorithm.elementName), !value.isEmpty { self[algorithm] = value }
        }
    }
}

/// `CreateMultipartUpload`'s answer (`InitiateMultipartUploadResult`).
public struct S3CreatedUpload: Sendable, Equatable {
    /// The bucket, as the server named it.
    public var bucket: String
    /// The key, as the server named it.
    public var key: String
    /// The new upload's id.
    public var uploadID: String

    /// Parses `CreateMultipartUpload`'s answer.
    ///
    /// - Throws: `S3Error` (`.malformedResponse`, or `.server` for an error document).
    public init(xml data: Data) throws {
        let root = try S3XMLElement.parseAnswer(data, what: "CreateMultipartUpload", expected: "InitiateMultipartUploadResult")
        guard let id = root.value("UploadId"), !id.isEmpty else {
            throw S3Error(.malformedResponse, "the server's CreateMultipartUpload answer has no UploadId")
        }
        bucket = root.value("Bucket") ?? ""
        key = root.value("Key") ?? ""
        uploadID = id
    }
}

/// A part as the server holds it (`ListParts`).
public struct S3ListedPart: Sendable, Equatable {
    /// The part's number, from 1.
    public var partNumber: Int
    /// The part's ETag, quotes included, as `CompleteMultipartUpload` wants it.
    public var eTag: String
    /// The part's size in bytes.
    public var size: Int64
    /// The part's checksums, where the server lists them.
    public var checksums: S3Checksums
    /// `LastModified`, in nanoseconds since 1970; nil when the server gives none it can read.
    public var lastModified: Int64?

    /// A listed part.
    public init(partNumber: Int, eTag: String, size: Int64, checksums: S3Checksums = [:], lastModified: Int64? = nil) {
        self.partNumber = partNumber
        self.eTag = eTag
        self.size = size
        self.checksums = checksums
        self.lastModified = lastModified
    }

    /// Per part number, the entries that count: those last modified latest, as S3 keeps only the
    /// last part sent with a number. SeaweedFS lists a part sent again (a rerun after `kill -9`)
    /// under its number once for each time, in no order; its `LastModified` has whole seconds,
    /// so two sends within a second are both latest (ties, in listing order). Entries without a
    /// `LastModified` count as older than any with one.
    ///
    /// - Returns: For each number listed, its latest entries (at least one).
    public static func latest(_ listed: [S3ListedPart]) -> [Int: [S3ListedPart]] {
        var latest: [Int: [S3ListedPart]] = [:]
        for part in listed {
            guard let held = latest[part.partNumber]?.first else {
                latest[part.partNumber] = [part]
                continue
            }
            switch (part.lastModified ?? .min, held.lastModified ?? .min) {
            case (let new, let old) where new > old: latest[part.partNumber] = [part]
            case (let new, let old) where new == old: latest[part.partNumber]!.append(part)
            default: break
            }
        }
        return latest
    }
}

/// One page of `ListParts` (`ListPartsResult`).
public struct S3PartsPage: Sendable, Equatable {
    /// The parts on this page, in order.
    public var parts: [S3ListedPart]
    /// Whether there are more parts; ask again from `nextPartNumberMarker`.
    public var isTruncated: Bool
    /// Where the next page starts, when there is one.
    public var nextPartNumberMarker: Int?
    /// The upload's checksum algorithm, when it has one.
    public var checksumAlgorithm: ChecksumAlgorithm?

    /// Parses a `ListParts` answer.
    ///
    /// - Throws: `S3Error` (`.malformedResponse`, or `.server` for an error document).
    public init(xml data: Data) throws {
        let root = try S3XMLElement.parseAnswer(data, what: "ListParts", expected: "ListPartsResult")
        parts = try root.children("Part").map { part in
            guard let number = part.value("PartNumber").flatMap(Int.init), let size = part.value("Size").flatMap(Int64.init) else {
                throw S3Error(.malformedResponse, "the server's ListParts answer has a part without a PartNumber or Size")
            }
            return S3ListedPart(
                partNumber: number, eTag: part.value("ETag") ?? "", size: size, checksums: S3Checksums(element: part),
                lastModified: part.value("LastModified").flatMap(S3ObjectsPage.nanoseconds(iso8601:)))
        }
        isTruncated = root.value("IsTruncated")?.lowercased() == "true"
        nextPartNumberMarker = root.value("NextPartNumberMarker").flatMap(Int.init)
        checksumAlgorithm = root.value("ChecksumAlgorithm").flatMap(ChecksumAlgorithm.init(name:))
        if isTruncated, nextPartNumberMarker == nil {
            throw S3Error(.malformedResponse, "the server's ListParts answer is truncated but has no NextPartNumberMarker")
        }
    }
}

/// A part to name in `CompleteMultipartUpload`.
public struct S3CompletedPart: Sendable, Equatable, Codable {
    /// The part's number, from 1.
    public var partNumber: Int
    /// The ETag the server gave the part.
    public var eTag: String
    /// The part's checksums, base64, as sent with it.
    public var checksums: [ChecksumAlgorithm: String]

    /// A part to complete with.
    public init(partNumber: Int, eTag: String, checksums: [ChecksumAlgorithm: String] = [:]) {
        self.partNumber = partNumber
        self.eTag = eTag
        self.checksums = checksums
    }

    /// The `CompleteMultipartUpload` request body for `parts`, in part-number order.
    public static func completionDocument(_ parts: [S3CompletedPart]) -> Data {
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += #"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
        for part in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
            xml += "<Part>"
            for algorithm in ChecksumAlgorithm.allCases {
                if let value = part.checksums[algorithm] {
                    xml += "<\(algorithm.elementName)>\(s3XMLEscape(value))</\(algorithm.elementName)>"
                }
            }
            xml += "<ETag>\(s3XMLEscape(part.eTag))</ETag><PartNumber>\(part.partNumber)</PartNumber></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return Data(xml.utf8)
    }
}

/// `CompleteMultipartUpload`'s answer. S3 may answer 200 and put an error document in the
/// body (the completion failed after the status went out): that is thrown as `.server`.
public struct S3CompletedUpload: Sendable, Equatable {
    /// The object's URL, when the server gives one.
    public var location: String?
    /// The bucket, when the server names it.
    public var bucket: String?
    /// The key, when the server names it.
    public var key: String?
    /// The object's ETag (`"…-N"` for N parts).
    public var eTag: String
    /// The composite checksums (`…-N`), where the server returns them.
    public var checksums: S3Checksums

    /// Parses `CompleteMultipartUpload`'s answer.
    ///
    /// - Throws: `S3Error` (`.malformedResponse`, or `.server` for an error document).
    public init(xml data: Data) throws {
        let root = try S3XMLElement.parseAnswer(data, what: "CompleteMultipartUpload", expected: "CompleteMultipartUploadResult")
        location = root.value("Location")
        bucket = root.value("Bucket")
        key = root.value("Key")
        eTag = root.value("ETag") ?? ""
        checksums = S3Checksums(element: root)
    }

    /// The part count in a multipart ETag (`"…-N"`), when it has one.
    public var eTagPartCount: Int? { Self.partCount(ofETag: eTag) }

    /// The part count in a multipart object's ETag (`"…-N"`, from Complete or `HEAD`), when it has one.
    public static func partCount(ofETag eTag: String) -> Int? {
        let trimmed = eTag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard let dash = trimmed.lastIndex(of: "-") else { return nil }
        return Int(trimmed[trimmed.index(after: dash)...])
    }
}

/// One multipart upload in progress (`ListMultipartUploads`).
public struct S3UploadInProgress: Sendable, Equatable {
    /// The object's key.
    public var key: String
    /// The upload's id.
    public var uploadID: String
    /// When the upload was created, as the server wrote it.
    public var initiated: String?
}

/// One page of `ListMultipartUploads`.
public struct S3UploadsPage: Sendable, Equatable {
    /// The uploads on this page.
    public var uploads: [S3UploadInProgress]
    /// Whether there are more; ask again from the two markers.
    public var isTruncated: Bool
    /// The key the next page starts after.
    public var nextKeyMarker: String?
    /// The upload id the next page starts after.
    public var nextUploadIDMarker: String?

    /// Parses a `ListMultipartUploads` answer.
    ///
    /// - Throws: `S3Error` (`.malformedResponse`, or `.server` for an error document).
    public init(xml data: Data) throws {
        let root = try S3XMLElement.parseAnswer(data, what: "ListMultipartUploads", expected: "ListMultipartUploadsResult")
        uploads = root.children("Upload").compactMap { upload in
            guard let key = upload.child("Key")?.text, let id = upload.value("UploadId") else { return nil }
            return S3UploadInProgress(key: key, uploadID: id, initiated: upload.value("Initiated"))
        }
        isTruncated = root.value("IsTruncated")?.lowercased() == "true"
        nextKeyMarker = root.child("NextKeyMarker")?.text
        nextUploadIDMarker = root.value("NextUploadIdMarker")
    }
}

extension S3XMLElement {
    /// Parses an answer that should have root `expected` (or `<what>Response`, which moto's
    /// S3 server sends for Complete; botocore reads the children whatever the root); an
    /// `Error` root is thrown as the server's error.
    package static func parseAnswer(_ data: Data, what: String, expected: String) throws -> S3XMLElement {
        let root = try parse(data, what: what)
        if root.name == "Error" { throw S3ServerError(element: root).error(status: 200, action: what) }
        guard root.name == expected || root.name == what + "Response" else {
            throw S3Error(.malformedResponse, "the server's \(what) answer is <\(root.name)>, expected <\(expected)>")
        }
        return root
    }
}
