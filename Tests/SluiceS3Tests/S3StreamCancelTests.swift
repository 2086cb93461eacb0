import Foundation
import Testing
@testable import Sluice
#if canImport(Glibc)
import Glibc
#endif
import SluiceTestSupport

/// The library's stream reader ends a wait for stdin itself: a pipe that stays silent does not
/// keep `uploadStream` waiting once its task is cancelled, nor past the stall timeout, with no
/// wrapper of the caller's.
@Suite(.hangGuard)
struct S3StreamCancelTests {
    /// `uploadStream` of the read end of a pipe whose write end stays open and silent (a read(2)
    /// would block for ever), to an endpoint never reached; `act` runs on the task; its result
    /// within `patience`, or nil. (Alone it takes milliseconds; the bound is wide because the whole
    /// suite on two cores has been seen to hold every cooperative thread for half a minute.)
    func uploadSilentPipe(stallTimeout: Duration = .seconds(60), _ act: (Task<S3UploadResult, any Error>) -> Void = { _ in })
        async throws -> Result<S3UploadResult, any Error>?
    {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
            endpoint: URL(string: "http://127.0.0.1:9")!)
        var options = S3Options()
        options.stateDirectory = try s3TemporaryDirectory("stream-silent")
        options.transfer.stallTimeout = stallTimeout
        let client = S3Client(configuration: configuration, options: options)
        let stream = FileDescriptorStream(fd: fds[0], name: "a silent pipe")
        let location = try S3Location(parsing: "s3://bucket/key")
        let task = Task { try await client.uploadStream(stream, to: location) }
        act(task)
        return await taskResult(of: task)
    }

    @Test("cancelling uploadStream while it waits for a silent pipe ends it at once with .cancelled")
    func silentPipeIsCancellable() async throws {
        // Before: the read of the pipe blocked on its thread, and only the CLI's own polling
        // wrapper of stdin could end it.
        guard case .failure(let error as S3Error)? = try await uploadSilentPipe({ $0.cancel() }) else {
            Issue.record("uploadStream was not ended by the cancel within the test's patience (or did not fail with an S3Error)")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
    }

    @Test("a pipe silent for the stall timeout fails uploadStream in the library itself, naming the stall")
    func silentPipeStalls() async throws {
        guard case .failure(let error as S3Error)? = try await uploadSilentPipe(stallTimeout: .milliseconds(300)) else {
            Issue.record("uploadStream over a silent pipe did not fail within the test's patience")
            return
        }
        #expect(error.code == .source, "\(error)")
        #expect("\(error)".contains("produced nothing for 0.3 s"), "\(error)")
    }
}
