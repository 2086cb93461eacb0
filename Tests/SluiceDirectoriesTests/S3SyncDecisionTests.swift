import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
@testable import SluiceS3
import SluiceTestSupport

/// The pure parts of `s3 sync`: a `ListObjectsV2` page as S3 and SeaweedFS write it, the two
/// key orders, the AWS CLI's decision rule, and the spool that holds deletions on disk.
struct S3SyncDecisionTests {
    @Test func aURLEncodedPageDecodesKeysAndTimes() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p%2F</Prefix>\
            <IsTruncated>true</IsTruncated><NextContinuationToken>t+1/=</NextContinuationToken>\
            <Contents><Key>p/d/b+c</Key><Size>2</Size><ETag>&#34;e1&#34;</ETag><LastModified>2026-12-03T10:56:17Z</LastModified></Contents>\
            <Contents><Key>p/%C3%A9%2B%25%0A</Key><Size>0</Size><LastModified>2026-12-03T10:56:17.250Z</LastModified></Contents>\
            <EncodingType>url</EncodingType></ListBucketResult>
            """
        let page = try S3ObjectsPage(xml: Data(xml.utf8))
        #expect(page.objects.map(\.key) == ["p/d/b c", "p/é+%\n"])
        #expect(page.objects.map(\.size) == [2, 0])
        #expect(page.objects[0].eTag == "\"e1\"")
        #expect(page.objects[0].lastModified == 1_796_295_377_000_000_000)
        #expect(page.objects[1].lastModified == 1_796_295_377_250_000_000)
        #expect(page.isTruncated && page.nextContinuationToken == "t+1/=")
    }

    @Test(arguments: [
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><LastModified>2026-12-03T10:56:17Z</LastModified></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>1</Size><LastModified>yesterday</LastModified></Contents></ListBucketResult>",
        "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%ZZ</Key><Size>1</Size><LastModified>2026-12-03T10:56:17Z</LastModified></Contents></ListBucketResult>",
        "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%FF</Key><Size>1</Size><LastModified>2026-12-03T10:56:17Z</LastModified></Contents></ListBucketResult>",
    ])
    func aBrokenPageIsRefused(_ xml: String) {
        #expect(throws: S3Error.self) { try S3ObjectsPage(xml: Data(xml.utf8)) }
    }

    @Test func theTwoKeyOrders() {
        let keys = ["a-b", "a.txt", "a/b", "a/c/d", "a0", "b"]
        #expect(keys.sorted { KeyOrder.s3.precedes($0.utf8, $1.utf8) } == ["a-b", "a.txt", "a/b", "a/c/d", "a0", "b"])
        // SeaweedFS's listing of the same keys.
        #expect(keys.sorted { KeyOrder.hierarchical.precedes($0.utf8, $1.utf8) } == ["a/b", "a/c/d", "a-b", "a.txt", "a0", "b"])
        let problem = S3ListingOutOfOrder(listing: "s3://b/p/", previous: "a/b", key: "a-b", expected: .s3)
        #expect(problem.fitsHierarchical)
        #expect(!S3ListingOutOfOrder(listing: "s3://b/p/", previous: "b", key: "a", expected: .s3).fitsHierarchical)
    }

    @Test func theDecisionsAreTheAWSCLIs() {
        let second: Int64 = 1_000_000_000
        let file = WalkedFile(path: "/r/f", relativePath: "f", size: 10, modified: 100 * second, changed: 0, device: 0, inode: 0)
        func object(size: Int64 = 10, modified: Int64) -> S3ListedObject { S3ListedObject(key: "f", size: size, lastModified: modified) }
        let rule = SyncComparison.sizeAndTime
        #expect(rule.reason(toSend: file, over: nil) == .missing)
        #expect(rule.reason(toSend: file, over: object(size: 11, modified: 200 * second)) == .sizeDiffers)
        #expect(rule.reason(toSend: file, over: object(modified: 100 * second)) == nil)  // the same time: held
        #expect(rule.reason(toSend: file, over: object(modified: 99 * second)) == .newer)
        #expect(rule.reason(toSend: file, over: object(modified: 101 * second)) == nil)
        // Below the microsecond the times are one (Python's datetime).
        var close = file
        close.modified = 100 * second + 400
        #expect(rule.reason(toSend: close, over: object(modified: 100 * second)) == nil)
        close.modified = 100 * second + 1_500
        #expect(rule.reason(toSend: close, over: object(modified: 100 * second)) == .newer)
        #expect(SyncComparison.sizeOnly.reason(toSend: file, over: object(modified: 1)) == nil)
        #expect(SyncComparison.sizeOnly.reason(toSend: file, over: object(size: 9, modified: 1)) == .sizeDiffers)
        #expect(S3ListedObject(key: "d/", size: 0, lastModified: 0).isFolderMarker)
        #expect(!S3ListedObject(key: "d/", size: 1, lastModified: 0).isFolderMarker)
    }

    @Test func theSpoolGivesBackWhatItWasGivenInOrder() throws {
        let spool = try KeySpool()
        defer { spool.close() }
        let keys = (0..<2_500).map { "key \($0) " + String(repeating: "é\n", count: $0 % 7) } + [""]
        for key in keys { try spool.append(key) }
        #expect(spool.count == keys.count)
        var back: [String] = []
        while let key = try spool.next() { back.append(key) }
        #expect(back == keys)
        #expect(try spool.next() == nil)
    }
}
