import Foundation
import Testing
@testable import Sluice
@testable import SluiceS3
import SluiceTestSupport

/// A transport failure means the same to S3 whether a part or a single request met it: both
/// read the one mapping `S3Error.Code.of(transport:exhausted:)` (issue 40).
struct S3TransportFailureTests {
    /// Fails every request with one transport error (fault injection: no server says this).
    final class Failing: UploadTransport {
        let error: UploadError
        init(_ error: UploadError) { self.error = error }

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            throw error
        }
    }

    @Test(
        "a transport failure of a part and of a single request give the same S3Error code",
        arguments: [
            UploadError.Code.connectionFailed, .connectionReset, .noResponse, .timedOut, .tooManyRedirects, .invalidURL,
            .sourceFailed, .tls, .transport, .protocolViolation, .responseTooLarge,
        ], [0, 1])
    func partAndRequestAgree(code: UploadError.Code, retries: Int) async throws {
        let transport = Failing(UploadError(code, "injected \(code)"))
        let client = S3AnswerProofTests.client(S3AnswerProofTests.FakeS3(faulty: .head, fault: .empty), retries: retries)
        let failing = S3Client(configuration: client.configuration, options: client.options, transport: transport)
        let location = try S3Location(parsing: "s3://bucket/k")
        let single = await #expect(throws: S3Error.self) { _ = try await failing.headObject(location) }
        let part = await #expect(throws: S3Error.self) {
            _ = try await failing.sendParts(
                [1], of: MemoryByteSource(Array("body".utf8)), plan: try S3PartPlan(length: 4, partSize: 5 << 20), to: location,
                uploadID: "U", counters: S3Counters(), meter: S3PartProgress(total: nil, interval: .seconds(1), report: nil))
        }
        #expect(part?.code == single?.code, "\(code): part \(String(describing: part)), request \(String(describing: single))")
        #expect(part?.code != nil && part?.code != .malformedResponse)
        #expect(part?.partNumber == (code == .invalidURL ? nil : 1))
    }
}
