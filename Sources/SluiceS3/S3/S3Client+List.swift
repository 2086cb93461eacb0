import Foundation
import SluiceRequests

extension S3Client {
    /// The most bytes of a `ListObjectsV2` or `DeleteObjects` answer read: 1,000 keys of
    /// 1,024 bytes, each up to three times that URL-encoded, with their other fields.
    package static let listingAnswerLimit = 8 << 20

    /// One page of `ListObjectsV2` of `prefix` in `bucket`, URL-encoded (any key comes through).
    ///
    /// - Parameters:
    ///   - bucket: The bucket to list.
    ///   - prefix: The keys listed start with it (empty: every key).
    ///   - token: The previous page's `nextContinuationToken`; nil for the first page.
    /// - Throws: `S3Error` (`.server` with `NoSuchBucket` for a bucket that does not exist).
    public func listObjectsPage(bucket: String, prefix: String, token: String?) async throws -> S3ObjectsPage {
        var query = [SigV4QueryItem("list-type", "2"), SigV4QueryItem("encoding-type", "url"), SigV4QueryItem("prefix", prefix)]
        if let token { query.append(SigV4QueryItem("continuation-token", token)) }
        let call = S3Call(
            method: "GET", location: try S3Location(bucket: bucket, key: ""), query: query, action: "ListObjectsV2",
            answerLimit: Self.listingAnswerLimit)
        return try S3ObjectsPage(xml: try await send(call).response.body)
    }

    /// The objects under `prefix` in `bucket`, in key order, a page at a time (`S3ObjectListing`).
    ///
    /// - Parameters:
    ///   - bucket: The bucket to list.
    ///   - prefix: The keys listed start with it (empty: every key).
    ///   - order: The order the server is expected to list in (S3's by default).
    public func listObjects(bucket: String, prefix: String, order: KeyOrder = .s3) -> S3ObjectListing {
        S3ObjectListing(client: self, bucket: bucket, prefix: prefix, order: order)
    }
}

/// A listing whose keys do not come in the order expected: a merge-join against it would take
/// present objects for missing ones.
public struct S3ListingOutOfOrder: Error, Sendable, Equatable, CustomStringConvertible {
    /// The listing: `s3://BUCKET/PREFIX`.
    public var listing: String
    /// The key listed before `key`.
    public var previous: String
    /// The key that came after `previous` but does not follow it in the expected order.
    public var key: String
    /// The order expected.
    public var expected: KeyOrder

    /// Whether the two keys are in the other order `KeyOrder` knows (a server that lists as a
    /// file system does, as SeaweedFS).
    public var fitsHierarchical: Bool {
        expected == .s3 && KeyOrder.hierarchical.precedes(previous.utf8, key.utf8)
    }

    public var description: String {
        "the server's ListObjectsV2 of \(listing) is not in \(expected == .s3 ? "S3's" : "a file system's") key order (\(key.debugDescription) after \(previous.debugDescription))"
    }
}

/// The objects under a prefix, one at a time in key order: `ListObjectsV2` a page at a time,
/// the next page asked for while this one is used.
///
/// Memory is two pages (1,000 keys each), whatever the number of objects. Keys must come in
/// strictly ascending `order` (S3's byte order by default) and under the prefix: a listing that
/// goes back, or whose pages do not advance, fails instead of being trusted (a merge-join
/// against it would otherwise take present objects for missing ones).
///
/// - Important: One task at a time calls `next`; call `close` when done with it early, so the
///   page asked for ahead is cancelled and joined.
public struct S3ObjectListing: Sendable {
    package let client: S3Client
    /// The bucket listed.
    public let bucket: String
    /// The prefix listed.
    public let prefix: String
    /// The order the keys must come in.
    public let order: KeyOrder

    private var page: [S3ListedObject] = []
    private var index = 0
    private var ahead: Task<S3ObjectsPage, any Error>?
    private var started = false
    private var lastKey: [UInt8]?
    private var lastToken: String?
    /// Pages read so far.
    public private(set) var pages = 0

    package init(client: S3Client, bucket: String, prefix: String, order: KeyOrder) {
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.order = order
    }

    /// The next object, nil after the last.
    ///
    /// - Throws: `S3Error` from the request (`.malformedResponse` for keys outside the prefix),
    ///   `S3ListingOutOfOrder` for keys out of `order`.
    public mutating func next() async throws -> S3ListedObject? {
        while index == page.count {
            guard let task = nextRequest() else { return nil }
            // The page is asked for in a task of its own (the next one while this is used): a
            // cancel of the caller (SIGINT, SIGTERM) ends its wait at once, not after the
            // request's retries (issue 37.8).
            let answer = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            ahead = nil
            pages += 1
            page = answer.objects
            index = 0
            if answer.isTruncated, let token = answer.nextContinuationToken {
                guard token != lastToken else {
                    throw S3Error(.malformedResponse, "the server's ListObjectsV2 pages of s3://\(bucket)/\(prefix) do not advance (token \(token))")
                }
                lastToken = token
                let (client, bucket, prefix) = (self.client, self.bucket, self.prefix)
                ahead = Task { try await client.listObjectsPage(bucket: bucket, prefix: prefix, token: token) }
            } else {
                lastToken = nil
            }
        }
        let object = page[index]
        index += 1
        let key = Array(object.key.utf8)
        guard key.starts(with: prefix.utf8) else {
            throw S3Error(.malformedResponse, "the server's ListObjectsV2 of s3://\(bucket)/\(prefix) lists \(object.key.debugDescription), which is not under the prefix")
        }
        if let lastKey, !order.precedes(lastKey, key) {
            throw S3ListingOutOfOrder(
                listing: "s3://\(bucket)/\(prefix)", previous: String(decoding: lastKey, as: UTF8.self), key: object.key,
                expected: order)
        }
        lastKey = key
        return object
    }

    /// The request for the page to read next: the first page's, the one asked for ahead, or nil
    /// when the last page was read.
    private mutating func nextRequest() -> Task<S3ObjectsPage, any Error>? {
        if !started {
            started = true
            let (client, bucket, prefix) = (self.client, self.bucket, self.prefix)
            return Task { try await client.listObjectsPage(bucket: bucket, prefix: prefix, token: nil) }
        }
        return ahead
    }

    /// Cancels and joins the page asked for ahead, if any; `next` returns nil afterwards.
    public mutating func close() async {
        if let ahead {
            ahead.cancel()
            _ = try? await ahead.value
        }
        ahead = nil
        started = true
        page = []
        index = 0
    }
}
