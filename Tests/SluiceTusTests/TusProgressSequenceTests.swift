import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// A tus upload's progress as an `AsyncSequence` (`TusClient.uploadWithProgress`), beside the
/// callback: the reports rise to the length and the sequence ends when the upload does.
@Suite(.serialized, .hangGuard)
struct TusProgressSequenceTests {
    @Test func reportsRiseToTheLengthAndEndWithTheUpload() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let length: Int64 = (3 << 20) + 7
        let bytes = SyntheticByteSource(length: length, seed: 12)
        var options = TusOptions()
        options.stateDirectory = try tusTemporaryDirectory("tus-progress")
        options.chunkSize = 1 << 20
        options.transfer.progressInterval = .zero
        let client = TusClient(options: options)
        let (progress, upload) = client.uploadWithProgress(TusSource(bytes, identity: "synthetic:progress:12"), to: peer.endpoint)
        var reports: [UploadProgress] = []
        for await report in progress { reports.append(report) }
        let result = try await upload.value
        #expect(result.bytesSent == length)
        #expect(reports.last?.bytesSent == length && reports.last?.totalBytes == length)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == Digest.sha256(of: bytes))
    }
}
