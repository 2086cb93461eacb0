import Foundation
import SluiceByteSources

/// A multipart upload a backend created for a client that sends its parts through presigned
/// URLs: what the backend keeps to presign the parts and to check the client's list, and
/// what the plan and the part list (`S3PresignedPlan`, `S3PresignedPartList`) say they are about.
///
/// As JSON: `{"bucket", "key", "uploadId", "size", "partSize", "checksumAlgorithm",
/// "checksumType", "sseCustomerKeyMD5"}` (the last three only when set); decoding checks the
/// bucket, the key and the part plan as S3 would (`S3Error`).
public struct S3PresignedUpload: Sendable, Equatable, Codable {
    /// The object the upload makes.
    public var location: S3Location
    /// The upload id `CreateMultipartUpload` returned.
    public var uploadID: String
    /// The object's length and part size: what the client must send, part by part.
    public var plan: S3PartPlan
    /// The checksum algorithm the upload was created with, if any.
    public var checksum: ChecksumAlgorithm?
    /// The checksum type the upload was created with when one was given (`x-amz-checksum-type`
    /// on Create, and on Complete for FULL_OBJECT); nil for the algorithm's own.
    public var checksumType: S3ChecksumType?
    /// With SSE-C: the MD5 of the key every part must carry (base64). A client holding the key
    /// adds it to each part (`S3PresignedPartsUpload.customerKey`); the URLs were signed with it.
    public var customerKeyMD5: String?

    /// An upload as the backend created it.
    ///
    /// - Parameters:
    ///   - location: The object the upload makes.
    ///   - uploadID: The id `CreateMultipartUpload` returned.
    ///   - plan: A plan of known length (`S3PartPlan(length:partSize:)`).
    ///   - checksum: The checksum algorithm the upload was created with, if any.
    ///   - checksumType: The checksum type given on Create, if one was.
    ///   - customerKeyMD5: With SSE-C, the MD5 of the key (base64).
    public init(
        location: S3Location, uploadID: String, plan: S3PartPlan, checksum: ChecksumAlgorithm?, checksumType: S3ChecksumType? = nil,
        customerKeyMD5: String? = nil
    ) {
        precondition(plan.length != nil, "a presigned upload has a known length")
        self.location = location
        self.uploadID = uploadID
        self.plan = plan
        self.checksum = checksum
        self.checksumType = checksumType
        self.customerKeyMD5 = customerKeyMD5
    }

    /// The object's length.
    public var size: Int64 { plan.length ?? 0 }
    /// The number of parts.
    public var partCount: Int { plan.partCount ?? 1 }

    package enum CodingKeys: String, CodingKey {
        case bucket, key, uploadID = "uploadId", size, partSize, checksumAlgorithm, checksumType, customerKeyMD5 = "sseCustomerKeyMD5"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let uploadID = try container.decode(String.self, forKey: .uploadID)
        guard !uploadID.isEmpty else { throw S3Error(.invalidOption, "the upload id is empty") }
        let location = try S3Location(bucket: container.decode(String.self, forKey: .bucket), key: container.decode(String.self, forKey: .key))
        guard !location.key.isEmpty else { throw S3Error(.invalidLocation, "\(location) names no object key") }
        let size = try container.decode(Int64.self, forKey: .size)
        guard size >= 0 else { throw S3Error(.invalidOption, "the size \(size) is negative") }
        let plan = try S3PartPlan(length: size, partSize: container.decode(Int64.self, forKey: .partSize))
        self.init(
            location: location, uploadID: uploadID, plan: plan,
            checksum: try container.decodeIfPresent(ChecksumAlgorithm.self, forKey: .checksumAlgorithm),
            checksumType: try container.decodeIfPresent(S3ChecksumType.self, forKey: .checksumType),
            customerKeyMD5: try container.decodeIfPresent(String.self, forKey: .customerKeyMD5))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(location.bucket, forKey: .bucket)
        try container.encode(location.key, forKey: .key)
        try container.encode(uploadID, forKey: .uploadID)
        try container.encode(size, forKey: .size)
        try container.encode(plan.partSize, forKey: .partSize)
        try container.encodeIfPresent(checksum, forKey: .checksumAlgorithm)
        try container.encodeIfPresent(checksumType, forKey: .checksumType)
        try container.encodeIfPresent(customerKeyMD5, forKey: .customerKeyMD5)
    }
}

/// The backend half of a presigned multipart upload: the side that holds the credentials.
///
/// ```swift
/// let upload = try await client.createPresignedUpload(location, length: size)     // CreateMultipartUpload
/// // per part, when the app asks (its checksum, if it sends one, is signed in):
/// let url = try client.presignPart(of: upload, number: n, checksum: checksum, expires: 900)
/// // once the app reports its list:
/// let result = try await client.completePresignedUpload(upload, parts: reported)
/// ```
extension S3Client {
    /// Creates the multipart upload (`CreateMultipartUpload` with `options.object`'s headers
    /// and `options.checksum` as its algorithm, `options.checksumType` as its type) and plans
    /// its parts (`options.partSize`, else 8 MiB grown to fit 10,000 parts).
    ///
    /// - Throws: `S3Error`: `.tooManyParts`, `.objectTooLarge`, `.invalidOption` for the plan
    ///   (before any request), or the server's refusal.
    public func createPresignedUpload(_ location: S3Location, length: Int64) async throws -> S3PresignedUpload {
        try options.validate()
        guard !location.key.isEmpty else { throw S3Error(.invalidLocation, "\(location) names no object key") }
        let plan = try S3PartPlan(length: length, partSize: options.partSize)
        let uploadID = try await createMultipartUpload(location, counters: S3Counters())
        return presignedUpload(location, uploadID: uploadID, plan: plan)
    }

    /// The upload `uploadID` of `location` by `plan`, with these options' checksum and SSE-C key.
    public func presignedUpload(_ location: S3Location, uploadID: String, plan: S3PartPlan) -> S3PresignedUpload {
        S3PresignedUpload(
            location: location, uploadID: uploadID, plan: plan, checksum: options.checksum,
            checksumType: options.checksum == nil ? nil : options.checksumType, customerKeyMD5: options.object.customerKey?.md5Base64)
    }

    /// A presigned `UploadPart` URL for part `number` (SigV4 query signing, `host` signed, and
    /// the checksum header when `checksum` is given: S3 then refuses bytes that do not match it).
    /// The part's object headers are signed too (`options.object`: SSE-C, expected bucket
    /// owner) and listed in the answer's `headers`, except the SSE-C key itself
    /// (`S3CustomerKey.keyHeader`), which the client adds from its own copy of the key.
    ///
    /// - Parameters:
    ///   - upload: The upload the part belongs to.
    ///   - number: The part's number, 1 ... the plan's part count.
    ///   - checksum: The part's checksum as the client computed it, in the upload's algorithm.
    ///   - expires: Seconds the URL is valid, 1 ... 604800.
    ///   - timestamp: The signing time the expiry counts from; now by default.
    /// - Returns: The URL and the headers to send with it.
    /// - Throws: `S3Error` with code `.invalidOption` (a part number outside the plan, a
    ///   checksum of another algorithm, an expiry out of range) or `.credentials`.
    public func presignPart(
        of upload: S3PresignedUpload, number: Int, checksum: Checksum? = nil, expires: Int = 3600,
        at timestamp: SigV4Timestamp = SigV4Timestamp()
    ) throws -> S3PresignedURL {
        let count = upload.partCount
        guard (1...count).contains(number) else {
            throw S3Error(.invalidOption, "part \(number) is not in upload \(upload.uploadID), which has parts 1 ... \(count)", uploadID: upload.uploadID)
        }
        if let checksum, checksum.algorithm != upload.checksum {
            throw S3Error(
                .invalidOption, "a \(checksum.algorithm.s3Name) checksum for part \(number) of an upload with \(upload.checksum?.s3Name ?? "no checksum")",
                uploadID: upload.uploadID, partNumber: number)
        }
        guard options.object.customerKey?.md5Base64 == upload.customerKeyMD5 else {
            throw S3Error(
                .invalidOption,
                upload.customerKeyMD5 == nil
                    ? "upload \(upload.uploadID) has no SSE-C key; its parts cannot carry one"
                    : "upload \(upload.uploadID) was created with an SSE-C key (MD5 \(upload.customerKeyMD5!)); its parts are presigned with the same key",
                uploadID: upload.uploadID)
        }
        let call = S3Call(
            method: "PUT", location: upload.location,
            query: [SigV4QueryItem("partNumber", "\(number)"), SigV4QueryItem("uploadId", upload.uploadID)],
            headers: (checksum.map { [SigV4Header($0.algorithm.headerName, $0.base64)] } ?? []) + options.object.headers(for: .uploadPart),
            action: "UploadPart", uploadID: upload.uploadID, partNumber: number)
        do {
            let (url, signature) = try makeSigner().presign(try signingRequest(call), expires: expires, at: timestamp)
            let headers = signature.headers.filter { !["host", S3CustomerKey.keyHeader].contains($0.name.lowercased()) }
            return S3PresignedURL(url: url, headers: Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }))
        } catch let error as S3Error {
            throw error
        } catch {
            throw S3Error(.invalidOption, "cannot presign part \(number) of \(upload.location): \(error)", uploadID: upload.uploadID, underlying: error)
        }
    }

    /// Every part's URL at once, as a document for a client (`plan.json`). The URLs sign no
    /// checksum (the backend does not know the bytes yet); the client computes the upload's
    /// checksum per part and reports it, and S3's own is checked at completion.
    ///
    /// - Throws: As `presignPart`.
    public func presignedPlan(_ upload: S3PresignedUpload, expires: Int = 3600) throws -> S3PresignedPlan {
        let timestamp = SigV4Timestamp()
        let parts = try (1...upload.partCount).map { number in
            let range = upload.plan.range(ofPart: number)
            let presigned = try presignPart(of: upload, number: number, expires: expires, at: timestamp)
            return S3PresignedPlan.Part(
                partNumber: number, offset: range.lowerBound, length: Int64(range.count), url: presigned.url,
                headers: presigned.headers.isEmpty ? nil : presigned.headers)
        }
        return S3PresignedPlan(upload: upload, parts: parts)
    }

    /// Completes the upload from the client's list, after checking it: exactly parts 1 ... N
    /// of the plan, each held by the server (`ListParts`, its latest entry for the number) with
    /// the ETag the client reported and the size the plan gives it, each with a well-formed
    /// checksum when the upload has an algorithm, equal to the server's where it lists one.
    /// Then `CompleteMultipartUpload`, and the part count and composite checksum of its answer
    /// are checked against the list.
    ///
    /// - Returns: The object's ETag, part count and verified checksum.
    /// - Throws: `S3Error` with code `.verification` naming the first part that does not
    ///   match (nothing is completed then), or the server's refusal.
    public func completePresignedUpload(_ upload: S3PresignedUpload, parts: [S3CompletedPart]) async throws -> S3UploadResult {
        let start = ContinuousClock.now
        let counters = S3Counters()
        let id = upload.uploadID
        let count = upload.partCount
        func mismatch(_ reason: String, part: Int? = nil) -> S3Error {
            S3Error(
                .verification, "the parts reported for upload \(id) of \(upload.location) \(reason); nothing was completed",
                uploadID: id, partNumber: part)
        }
        let numbers = parts.map(\.partNumber).sorted()
        guard numbers == Array(1...count) else {
            throw mismatch("are numbered \(Self.describe(numbers)); the plan has parts 1 ... \(count)")
        }
        if let algorithm = upload.checksum {
            for part in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
                guard let reported = part.checksums[algorithm] else {
                    throw mismatch("lack the \(algorithm.s3Name) checksum of part \(part.partNumber)", part: part.partNumber)
                }
                // Else the composite check after Complete would have nothing to compare (before: skipped).
                guard Checksum(algorithm: algorithm, base64: reported) != nil else {
                    throw mismatch(
                        "give part \(part.partNumber) the \(algorithm.s3Name) checksum \(String(reported.prefix(64)).debugDescription), which is not one",
                        part: part.partNumber)
                }
            }
        }
        // S3 keeps the last part sent with a number; SeaweedFS lists each send (S3ListedPart.latest).
        let held = S3ListedPart.latest(try await listParts(upload.location, uploadID: id, counters: counters))
        for part in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
            let number = part.partNumber
            let size = Int64(upload.plan.range(ofPart: number).count)
            guard let latest = held[number] else { throw mismatch("name part \(number), which the server does not hold", part: number) }
            guard let listed = latest.first(where: { Self.sameETag($0.eTag, part.eTag) }) else {
                let eTags = latest.map(\.eTag).joined(separator: " or ")
                throw mismatch("give part \(number) the ETag \(part.eTag); the server holds \(eTags)", part: number)
            }
            guard listed.size == size else {
                throw mismatch("include part \(number) of \(listed.size) bytes; the plan gives it \(size)", part: number)
            }
            // Where the server lists the part's checksum, it is the one reported (before: only after Complete).
            if let algorithm = upload.checksum, let theirs = listed.checksums[algorithm], let reported = part.checksums[algorithm],
                theirs != reported
            {
                throw mismatch(
                    "give part \(number) the \(algorithm.s3Name) checksum \(reported); the server holds \(theirs)", part: number)
            }
        }
        var client = self
        client.options.checksum = upload.checksum
        client.options.checksumType = upload.checksumType
        let ordered = parts.sorted { $0.partNumber < $1.partNumber }
        let lengths = (1...count).map { Int64(upload.plan.range(ofPart: $0).count) }
        let completed = try await client.completeMultipartUpload(upload.location, uploadID: id, parts: ordered, lengths: lengths, counters: counters)
        let verified = try client.verify(completed, parts: ordered, lengths: lengths, uploadID: id)
        return S3UploadResult(
            location: upload.location, length: upload.size, eTag: completed.eTag, uploadID: id, partCount: count,
            partsSkipped: 0, resumed: false, bytesSent: counters.bytesSent, retries: counters.retries, checksum: verified,
            elapsed: Self.seconds(since: start))
    }

    /// ETags compared without their quotes (S3 lists them quoted; clients pass them either way).
    package static func sameETag(_ a: String, _ b: String) -> Bool {
        let quotes = CharacterSet(charactersIn: "\"")
        return a.trimmingCharacters(in: quotes) == b.trimmingCharacters(in: quotes)
    }

    /// `1, 2, 4` (the first few, then `…`).
    private static func describe(_ numbers: [Int]) -> String {
        guard !numbers.isEmpty else { return "none" }
        let shown = numbers.prefix(8).map(String.init).joined(separator: ", ")
        return numbers.count > 8 ? shown + ", … (\(numbers.count) in all)" : shown
    }
}
