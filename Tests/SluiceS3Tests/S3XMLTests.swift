import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// S3's XML: the answers Sluice reads, the Complete document it writes, and error documents,
/// checked by hand and against botocore's rest-xml parser on the same documents.
struct S3XMLTests {
    static let namespace = #"xmlns="http://s3.amazonaws.com/doc/2006-03-01/""#

    static let created = """
        <?xml version="1.0" encoding="UTF-8"?>
        <InitiateMultipartUploadResult \(namespace)><Bucket>bucket</Bucket><Key>a &amp; b/ü.bin</Key><UploadId>VXBsb2FkIElE-1</UploadId></InitiateMultipartUploadResult>
        """

    static let partsPage1 = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListPartsResult \(namespace)>
          <Bucket>bucket</Bucket><Key>k</Key><UploadId>U</UploadId>
          <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker>
          <MaxParts>2</MaxParts><IsTruncated>true</IsTruncated><ChecksumAlgorithm>CRC32C</ChecksumAlgorithm>
          <Part><PartNumber>1</PartNumber><LastModified>2026-11-30T12:00:00.000Z</LastModified>
            <ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag><Size>8388608</Size><ChecksumCRC32C>yZRlqg==</ChecksumCRC32C></Part>
          <Part><PartNumber>2</PartNumber><ETag>"aaaa"</ETag><Size>8388608</Size></Part>
        </ListPartsResult>
        """

    static let partsPage2 = """
        <ListPartsResult \(namespace)><IsTruncated>false</IsTruncated>
          <Part><PartNumber>3</PartNumber><ETag>"bbbb"</ETag><Size>1</Size><ChecksumSHA256>n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=</ChecksumSHA256></Part>
        </ListPartsResult>
        """

    static let completed = """
        <?xml version="1.0" encoding="UTF-8"?>
        <CompleteMultipartUploadResult \(namespace)><Location>http://127.0.0.1/bucket/k</Location><Bucket>bucket</Bucket><Key>k</Key>
        <ETag>"3858f62230ac3c915f300c664312c11f-3"</ETag><ChecksumCRC32C>AAAAAA==-3</ChecksumCRC32C></CompleteMultipartUploadResult>
        """

    static let completedWithError = """
        <?xml version="1.0" encoding="UTF-8"?>
        <Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>R1</RequestId></Error>
        """

    static let uploads = """
        <ListMultipartUploadsResult \(namespace)><Bucket>bucket</Bucket><IsTruncated>true</IsTruncated>
        <NextKeyMarker> spaced key </NextKeyMarker><NextUploadIdMarker>U2</NextUploadIdMarker>
        <Upload><Key> spaced key </Key><UploadId>U1</UploadId><Initiated>2026-11-30T12:00:00.000Z</Initiated></Upload>
        <Upload><Key>other</Key><UploadId>U2</UploadId></Upload></ListMultipartUploadsResult>
        """

    @Test func readsCreateMultipartUpload() throws {
        let created = try S3CreatedUpload(xml: Data(Self.created.utf8))
        #expect(created.bucket == "bucket" && created.key == "a & b/ü.bin" && created.uploadID == "VXBsb2FkIElE-1")
        #expect(throws: S3Error.self) { try S3CreatedUpload(xml: Data("<InitiateMultipartUploadResult/>".utf8)) }
        #expect(throws: S3Error.self) { try S3CreatedUpload(xml: Data("not xml".utf8)) }
        #expect(throws: S3Error.self) { try S3CreatedUpload(xml: Data("<Other><UploadId>x</UploadId></Other>".utf8)) }
    }

    @Test func readsListPartsPages() throws {
        let first = try S3PartsPage(xml: Data(Self.partsPage1.utf8))
        #expect(first.isTruncated && first.nextPartNumberMarker == 2)
        #expect(first.checksumAlgorithm == .crc32c)
        #expect(
            first.parts == [
                S3ListedPart(
                    partNumber: 1, eTag: "\"7778aef83f66abc1fa1e8477f296d394\"", size: 8_388_608, checksums: [.crc32c: "yZRlqg=="],
                    lastModified: 1_796_040_000_000_000_000),
                S3ListedPart(partNumber: 2, eTag: "\"aaaa\"", size: 8_388_608),
            ])
        let second = try S3PartsPage(xml: Data(Self.partsPage2.utf8))
        #expect(!second.isTruncated && second.nextPartNumberMarker == nil)
        #expect(second.parts.first?.checksums[.sha256] == "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=")
        #expect(throws: S3Error.self) { try S3PartsPage(xml: Data("<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>".utf8)) }
        #expect(throws: S3Error.self) { try S3PartsPage(xml: Data("<ListPartsResult><Part><ETag>x</ETag></Part></ListPartsResult>".utf8)) }
    }

    /// A 417 without an error document (a server refusing `Expect: 100-continue` on a part)
    /// says what happened, not "417 HTTP417".
    @Test func aRefusedExpectationSaysWhatHappened() {
        let message = S3ServerError(status: 417, body: Data()).error(status: 417, action: "UploadPart", partNumber: 2).message
        #expect(message.hasPrefix("UploadPart of part 2 failed: 417 the server refused the request's Expect: 100-continue (417 Expectation Failed)"), "\(message)")
        #expect(!message.contains("HTTP417"))
    }

    /// SeaweedFS lists a part sent again once for each send, in no order, with whole-second
    /// `LastModified`s: the latest entries count (several when they tie), as S3 keeps the last.
    @Test func theLatestEntryOfAPartSentTwiceCounts() throws {
        func part(_ number: Int, _ eTag: String, _ modified: String?) -> String {
            "<Part><PartNumber>\(number)</PartNumber>" + (modified.map { "<LastModified>\($0)</LastModified>" } ?? "")
                + "<ETag>\"\(eTag)\"</ETag><Size>5</Size></Part>"
        }
        let document =
            "<ListPartsResult><IsTruncated>false</IsTruncated>"
            + part(1, "new", "2026-12-03T11:33:17Z") + part(1, "old", "2026-12-03T11:33:15Z")
            + part(2, "old", "2026-12-03T11:33:15.250Z") + part(2, "new", "2026-12-03T11:33:15.500Z")
            + part(3, "a", "2026-12-03T11:33:18Z") + part(3, "b", "2026-12-03T11:33:18Z") + part(3, "older", "2026-12-03T11:33:01Z")
            + part(4, "undated", nil) + part(4, "dated", "1970-01-01T00:00:00Z")
            + "</ListPartsResult>"
        let listed = try S3PartsPage(xml: Data(document.utf8)).parts
        #expect(listed.first?.lastModified == 1_796_297_597_000_000_000)
        let latest = S3ListedPart.latest(listed).mapValues { $0.map(\.eTag) }
        #expect(latest == [1: ["\"new\""], 2: ["\"new\""], 3: ["\"a\"", "\"b\""], 4: ["\"dated\""]])
    }

    @Test func readsCompleteAndItsHiddenErrors() throws {
        let done = try S3CompletedUpload(xml: Data(Self.completed.utf8))
        #expect(done.eTag == "\"3858f62230ac3c915f300c664312c11f-3\"")
        #expect(done.eTagPartCount == 3)
        #expect(done.checksums == [.crc32c: "AAAAAA==-3"])
        // moto's server names the root CompleteMultipartUploadResponse; another root is refused.
        let moto = Self.completed.replacingOccurrences(of: "CompleteMultipartUploadResult", with: "CompleteMultipartUploadResponse")
        #expect(try S3CompletedUpload(xml: Data(moto.utf8)).eTagPartCount == 3)
        let other = Self.completed.replacingOccurrences(of: "CompleteMultipartUploadResult", with: "ListPartsResult")
        #expect(throws: S3Error.self) { try S3CompletedUpload(xml: Data(other.utf8)) }
        do {
            _ = try S3CompletedUpload(xml: Data(Self.completedWithError.utf8))
            Issue.record("a 200 with an error document was taken for success")
        } catch let error as S3Error {
            #expect(error.code == .server && error.serverCode == "InternalError")
        }
    }

    @Test func readsListMultipartUploads() throws {
        let page = try S3UploadsPage(xml: Data(Self.uploads.utf8))
        #expect(page.uploads.map(\.key) == [" spaced key ", "other"])
        #expect(page.uploads.map(\.uploadID) == ["U1", "U2"])
        #expect(page.isTruncated && page.nextKeyMarker == " spaced key " && page.nextUploadIDMarker == "U2")
    }

    @Test func writesTheCompleteDocumentInPartOrderWithChecksums() throws {
        let document = S3CompletedPart.completionDocument([
            S3CompletedPart(partNumber: 2, eTag: "\"b\"", checksums: [.crc32c: "AAAAAQ=="]),
            S3CompletedPart(partNumber: 1, eTag: "\"a&<\"", checksums: [.crc32c: "AAAAAA==", .sha256: "x+/="]),
        ])
        let text = String(decoding: document, as: UTF8.self)
        #expect(
            text.contains(
                "<Part><ChecksumCRC32C>AAAAAA==</ChecksumCRC32C><ChecksumSHA256>x+/=</ChecksumSHA256><ETag>&quot;a&amp;&lt;&quot;</ETag><PartNumber>1</PartNumber></Part><Part><ChecksumCRC32C>AAAAAQ==</ChecksumCRC32C>"
            ))
        // It reads back as the parts it was made from.
        let root = try S3XMLElement.parse(document, what: "test")
        #expect(root.name == "CompleteMultipartUpload")
        #expect(root.children("Part").map { $0.value("ETag") } == ["\"a&<\"", "\"b\""])
        #expect(root.children("Part").map { $0.value("PartNumber") } == ["1", "2"])
    }

    @Test(arguments: [
        ("SignatureDoesNotMatch", 403, "secret access key"),
        ("AccessDenied", 403, "AccessDenied"),
        ("NoSuchBucket", 404, "bucket does not exist"),
        ("EntityTooSmall", 400, "5 MiB"),
        ("InvalidPart", 400, "InvalidPart"),
        ("SlowDown", 503, "slow down"),
        ("NoSuchUpload", 404, "aborted"),
    ])
    func explainsErrorDocumentsInOneLine(code: String, status: Int, phrase: String) {
        let body = "<?xml version=\"1.0\"?>\n<Error><Code>\(code)</Code><Message>The message.</Message><Resource>/b/k</Resource><RequestId>REQ</RequestId></Error>"
        let parsed = S3ServerError(status: status, body: Data(body.utf8))
        #expect(parsed.code == code && parsed.message == "The message." && parsed.requestID == "REQ")
        let error = parsed.error(status: status, action: "UploadPart", partNumber: 3)
        #expect(error.message.contains(phrase), "\(error.message)")
        #expect(error.message.contains("part 3") && error.message.contains("\(status)") && error.message.contains("REQ"))
        #expect(!error.message.contains("\n"))
        #expect(parsed.isRetryable(status: status) == (code == "SlowDown"))
    }

    /// A value is trimmed as Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`
    /// trims it (which `value` no longer calls: it went through UTF-16 for every value).
    @Test(arguments: [
        "", " ", "\n\t \r", "x", " x ", "\n\"etag\"\n", "a b", "\u{A0}x\u{2028}", "\u{85}\u{3000}x y\u{202F}",
        "\u{200B}x\u{FEFF}", "é\u{301} ", "\u{1680}\u{2000}\u{200A}\u{205F}", "\u{1F600}\u{0B}\u{0C}",
    ])
    func valuesAreTrimmedAsFoundationTrimsThem(_ text: String) {
        #expect(S3XMLElement.trimmed(text) == text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func errorsWithoutADocumentUseTheStatus() {
        #expect(S3ServerError(status: 403, body: Data()).code == "AccessDenied")
        #expect(S3ServerError(status: 502, body: Data("<html>bad gateway</html>".utf8)).isRetryable(status: 502))
        #expect(S3ServerError(status: 404, body: Data("plain".utf8)).message == "plain")
    }

    /// botocore reads the same documents to the same values.
    @Test func botocoreReadsTheSameValues() throws {
        let documents: [[String: Any]] = [
            ["operation": "CreateMultipartUpload", "status": 200, "body": Self.created],
            ["operation": "ListParts", "status": 200, "body": Self.partsPage1],
            ["operation": "ListParts", "status": 200, "body": Self.partsPage2],
            ["operation": "CompleteMultipartUpload", "status": 200, "body": Self.completed],
            ["operation": "ListMultipartUploads", "status": 200, "body": Self.uploads],
        ]
        let answers = try s3BotocorePeer(["xml": documents])
        let created = try #require(answers[0]["parsed"] as? [String: Any])
        let ours = try S3CreatedUpload(xml: Data(Self.created.utf8))
        #expect(created["UploadId"] as? String == ours.uploadID && created["Key"] as? String == ours.key)
        for (index, body) in [(1, Self.partsPage1), (2, Self.partsPage2)] {
            let theirs = try #require(answers[index]["parsed"] as? [String: Any])
            let page = try S3PartsPage(xml: Data(body.utf8))
            #expect((theirs["IsTruncated"] as? Bool ?? false) == page.isTruncated)
            #expect(theirs["NextPartNumberMarker"] as? Int == page.nextPartNumberMarker)
            let parts = theirs["Parts"] as? [[String: Any]] ?? []
            #expect(parts.map { $0["PartNumber"] as? Int } == page.parts.map(\.partNumber))
            #expect(parts.map { $0["ETag"] as? String } == page.parts.map(\.eTag))
            #expect(parts.map { ($0["Size"] as? NSNumber)?.int64Value } == page.parts.map(\.size))
            #expect(parts.map { $0["ChecksumCRC32C"] as? String } == page.parts.map { $0.checksums[.crc32c] })
            #expect(parts.map { $0["ChecksumSHA256"] as? String } == page.parts.map { $0.checksums[.sha256] })
        }
        let completed = try #require(answers[3]["parsed"] as? [String: Any])
        let done = try S3CompletedUpload(xml: Data(Self.completed.utf8))
        #expect(completed["ETag"] as? String == done.eTag && completed["ChecksumCRC32C"] as? String == done.checksums[.crc32c])
        let uploads = try #require(answers[4]["parsed"] as? [String: Any])
        let page = try S3UploadsPage(xml: Data(Self.uploads.utf8))
        #expect((uploads["Uploads"] as? [[String: Any]])?.map { $0["Key"] as? String } == page.uploads.map(\.key))
        #expect(uploads["NextKeyMarker"] as? String == page.nextKeyMarker)
    }
}
