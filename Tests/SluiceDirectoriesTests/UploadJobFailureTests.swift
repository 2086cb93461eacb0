import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport

/// A job's failed file says whether sending it again may pass (the "run again" hint of cp -r).
@Suite struct UploadJobFailureTests {
    @Test func aJobFailureIsTransientAsItsErrorIs() {
        #expect(UploadJobFailure(path: "a", name: "a", error: S3Error(.transport, "refused")).isTransient)
        #expect(!UploadJobFailure(path: "a", name: nil, error: S3Error(.invalidLocation, "too long")).isTransient)
        #expect(!UploadJobFailure(path: "a", name: nil, error: ByteSourceError.isDirectory(path: "a")).isTransient)
        #expect(UploadJobFailure(path: "a", name: nil, error: CancellationError()).isTransient)
    }
}
