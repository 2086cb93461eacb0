import Foundation

/// What is true of a multipart upload whose `CompleteMultipartUpload` was interrupted: the
/// server may have completed it before the interrupt reached it.
public enum S3InterruptedCompletion: Sendable, Equatable {
    /// The object is there with a multipart ETag of the upload's part count and its length:
    /// the server completed the upload before the interrupt reached it.
    case completed(eTag: String)
    /// The upload is gone and the object's ETag does not show it (no object, another part
    /// count): it may have completed and been replaced since, or been aborted elsewhere.
    case mayHaveCompleted
}

extension S3Client {
    /// Whether the multipart upload `uploadID` is still at the server: one `ListParts`
    /// request (a page of one part).
    ///
    /// - Throws: `S3Error` when the server cannot say (a failure other than `NoSuchUpload`).
    package func uploadExists(_ location: S3Location, uploadID: String) async throws -> Bool {
        let call = S3Call(
            method: "GET", location: location,
            query: [SigV4QueryItem("max-parts", "1"), SigV4QueryItem("uploadId", uploadID)],
            action: "ListParts", uploadID: uploadID)
        do {
            _ = try await send(call)
            return true
        } catch let error as S3Error where error.serverCode == "NoSuchUpload" {
            return false
        }
    }

    /// After `CompleteMultipartUpload` of `partCount` parts and `length` bytes was interrupted:
    /// `.completed` when the object is there with a multipart ETag of that part count and that
    /// length, else `.mayHaveCompleted`.
    package func completion(of location: S3Location, partCount: Int, length: Int64) async -> S3InterruptedCompletion {
        guard let object = (try? await headObject(location)) ?? nil,
            S3CompletedUpload.partCount(ofETag: object.eTag) == partCount, object.length == length
        else { return .mayHaveCompleted }
        return .completed(eTag: object.eTag)
    }

    /// After `CompleteMultipartUpload` was interrupted (file sources, whose upload is kept for
    /// a resume): nil while the upload is still at the server (or the server cannot say), else
    /// what became of it.
    package func completionIfGone(_ location: S3Location, uploadID: String, partCount: Int, length: Int64) async -> S3InterruptedCompletion? {
        guard (try? await uploadExists(location, uploadID: uploadID)) == false else { return nil }
        return await completion(of: location, partCount: partCount, length: length)
    }
}
