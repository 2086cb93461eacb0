import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// `s3://BUCKET/KEY`: parsing, folder keys, URL building for both addressing styles.
struct S3LocationTests {
    @Test(arguments: [
        ("s3://bucket/key", "bucket", "key"),
        ("s3://bucket/a b/c d.txt", "bucket", "a b/c d.txt"),
        ("s3://bucket/ünï/çødé 🎉", "bucket", "ünï/çødé 🎉"),
        ("s3://bucket//double//slash", "bucket", "/double//slash"),
        ("s3://bucket/dir/", "bucket", "dir/"),
        ("s3://bucket/", "bucket", ""),
        ("s3://bucket", "bucket", ""),
        ("s3://my.bucket-1_x/%2F+plus?q#h", "my.bucket-1_x", "%2F+plus?q#h"),
    ])
    func parses(text: String, bucket: String, key: String) throws {
        let location = try S3Location(parsing: text)
        #expect(location.bucket == bucket)
        #expect(location.key == key)
    }

    @Test(arguments: [
        "bucket/key", "S3://bucket/key", "s3:/bucket/key", "s3:///key", "s3://b/key", "s3://bad bucket/k",
        "s3://bucké/k", "https://bucket/key", "",
    ])
    func refuses(text: String) {
        #expect(throws: S3Error.self) { try S3Location(parsing: text) }
    }

    @Test func limitsTheKeyTo1024Bytes() throws {
        _ = try S3Location(parsing: "s3://bucket/" + String(repeating: "é", count: 512))
        #expect(throws: S3Error.self) { try S3Location(parsing: "s3://bucket/" + String(repeating: "é", count: 512) + "x") }
    }

    @Test func keepsTheUnicodeFormItWasGiven() throws {
        let composed = try S3Location(parsing: "s3://bucket/\u{E9}")
        let decomposed = try S3Location(parsing: "s3://bucket/e\u{301}")
        #expect(Array(composed.key.utf8) == [0xC3, 0xA9])
        #expect(Array(decomposed.key.utf8) == [0x65, 0xCC, 0x81])
    }

    @Test func folderKeysTakeTheSourceName() throws {
        #expect(try S3Location(parsing: "s3://bucket").resolvingKey(forSourceNamed: "f.bin").key == "f.bin")
        #expect(try S3Location(parsing: "s3://bucket/dir/").resolvingKey(forSourceNamed: "f.bin").key == "dir/f.bin")
        #expect(try S3Location(parsing: "s3://bucket/x").resolvingKey(forSourceNamed: "f.bin").key == "x")
        #expect(throws: S3Error.self) { try S3Location(parsing: "s3://bucket/dir/").resolvingKey(forSourceNamed: nil) }
    }

    @Test func encodesKeysOnceAndKeepsSlashes() {
        #expect(S3Location.encodePath("a b/c+d%2F/é~_.-") == "a%20b/c%2Bd%252F/%C3%A9~_.-")
        #expect(S3Location.encodePath("//x//") == "//x//")
    }

    @Test func buildsPathStyleURLsForCustomEndpoints() throws {
        let configuration = S3Configuration(
            credentials: nil, region: "us-east-1",
            endpoint: URL(string: "http://127.0.0.1:8333")!)
        let location = try S3Location(parsing: "s3://bucket/a b//c")
        #expect(configuration.url(for: location).absoluteString == "http://127.0.0.1:8333/bucket/a%20b//c")
        #expect(configuration.url(for: location, query: "uploads").absoluteString == "http://127.0.0.1:8333/bucket/a%20b//c?uploads")
        let prefixed = S3Configuration(credentials: nil, endpoint: URL(string: "https://host/s3/")!)
        #expect(prefixed.url(for: location).absoluteString == "https://host/s3/bucket/a%20b//c")
        var virtual = configuration
        virtual.addressingStyle = .virtual
        #expect(virtual.url(for: location).absoluteString == "http://bucket.127.0.0.1:8333/a%20b//c")
    }

    @Test func buildsVirtualHostedURLsForAWSWhenTheNameAllows() throws {
        let aws = S3Configuration(credentials: nil, region: "eu-west-1")
        #expect(aws.url(for: try S3Location(parsing: "s3://bucket/k")).absoluteString == "https://bucket.s3.eu-west-1.amazonaws.com/k")
        // A dot would not match the wildcard certificate; capitals are not DNS names.
        #expect(aws.url(for: try S3Location(parsing: "s3://my.bucket/k")).absoluteString == "https://s3.eu-west-1.amazonaws.com/my.bucket/k")
        #expect(aws.url(for: try S3Location(parsing: "s3://Bucket/k")).absoluteString == "https://s3.eu-west-1.amazonaws.com/Bucket/k")
        var path = aws
        path.addressingStyle = .path
        #expect(path.url(for: try S3Location(parsing: "s3://bucket/k")).absoluteString == "https://s3.eu-west-1.amazonaws.com/bucket/k")
    }
}
