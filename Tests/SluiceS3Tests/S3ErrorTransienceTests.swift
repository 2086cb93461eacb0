import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `S3Error.isTransient`: whether the same request made again may pass, read from the typed
/// code, status and S3 error code (never the message), with the retry policy's one list.
@Suite struct S3ErrorTransienceTests {
    @Test(arguments: [
        (S3Error(.server, "slow down", status: 503, serverCode: "SlowDown"), true),
        (S3Error(.server, "a pause", status: 400, serverCode: "RequestTimeout"), true),
        (S3Error(.server, "internal", status: 500, serverCode: "InternalError"), true),
        (S3Error(.server, "denied", status: 403, serverCode: "AccessDenied"), false),
        (S3Error(.server, "no bucket", status: 404, serverCode: "NoSuchBucket"), false),
        (S3Error(.server, "too long", status: 400, serverCode: "KeyTooLongError"), false),
        (S3Error(.invalidLocation, "the key is 1106 bytes; S3 allows at most 1024"), false),
        (S3Error(.invalidOption, "bad option"), false),
        (S3Error(.objectTooLarge, "too large"), false),
        (S3Error(.transport, "connection refused"), true),
        (S3Error(.retriesExhausted, "503 five times"), true),
        (S3Error(.cancelled, "interrupted"), true),
    ])
    func transience(error: S3Error, transient: Bool) {
        #expect(error.isTransient == transient, "\(error.code) \(error.serverCode ?? "-")")
    }
}
