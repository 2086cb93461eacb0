import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `S3ObjectOptions.copied(from:key:)`: what a copied object carries under each metadata
/// directive, read from a HeadObject answer.
@Suite struct S3CopyAttributesTests {
    /// A HeadObject answer of an image/png with attributes and two metadata pairs.
    static let head = S3ObjectHead(
        UploadResponse(
            status: 200,
            headers: [
                HTTPHeader(name: "Content-Length", value: "10"), HTTPHeader(name: "ETag", value: "\"e\""),
                HTTPHeader(name: "Content-Type", value: "image/png"), HTTPHeader(name: "Cache-Control", value: "max-age=60"),
                HTTPHeader(name: "Content-Disposition", value: "inline"), HTTPHeader(name: "Content-Encoding", value: "gzip"),
                HTTPHeader(name: "Content-Language", value: "fr"), HTTPHeader(name: "Expires", value: "Thu, 01 Dec 2033 16:00:00 GMT"),
                HTTPHeader(name: "x-amz-meta-Owner", value: "ada"), HTTPHeader(name: "x-amz-meta-n", value: "1"),
            ], body: Data(), bytesSent: 0, url: URL(string: "http://127.0.0.1:1/b/k")!))

    @Test func copyTakesTheSourceAttributesOverThoseGiven() {
        var options = S3ObjectOptions()
        options.contentType = "text/plain"
        options.cacheControl = "no-cache"
        options.storageClass = "STANDARD_IA"
        options.metadataDirective = .copy
        let copied = options.copied(from: Self.head, key: "dir/a.txt")
        #expect(copied.contentType == "image/png")
        #expect(copied.cacheControl == "max-age=60")
        #expect(copied.contentDisposition == "inline" && copied.contentEncoding == "gzip" && copied.contentLanguage == "fr")
        #expect(copied.expires.map(S3ObjectOptions.httpDate) == "Thu, 01 Dec 2033 16:00:00 GMT")
        #expect(copied.metadata == [S3Pair("owner", "ada"), S3Pair("n", "1")])
        // Not an attribute: the options' own.
        #expect(copied.storageClass == "STANDARD_IA")
    }

    @Test func metadataGivenMeansReplaceAsTheAWSCLI() {
        var options = S3ObjectOptions()
        options.metadata = [S3Pair("new", "1")]
        options.guessesContentType = true
        #expect(options.effectiveMetadataDirective == .replace)
        let copied = options.copied(from: Self.head, key: "dir/a.txt")
        #expect(copied.metadata == [S3Pair("new", "1")])
        // Guessed from the source's key, as aws-cli's ProvideCopyContentTypeSubscriber does.
        #expect(copied.contentType == "text/plain")
        #expect(copied.cacheControl == nil)
    }

    @Test func noOptionsMeansCopy() {
        let options = S3ObjectOptions()
        #expect(options.effectiveMetadataDirective == .copy)
        #expect(options.copied(from: Self.head, key: "k").contentType == "image/png")
        #expect(options.withoutAttributes.headers(for: .putObject).isEmpty)
    }
}
