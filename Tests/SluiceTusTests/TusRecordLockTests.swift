import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// One run of a resumable tus upload at a time: a second run while one holds the upload's
/// record is refused before any request (the endpoint here answers nothing), naming the
/// holder's pid (before: both created or resumed the upload, and each overwrote the other's
/// record).
@Suite(.hangGuard)
struct TusRecordLockTests {
    @Test func aSecondRunOfTheSameUploadIsRefusedAtOnce() async throws {
        var options = TusOptions()
        options.stateDirectory = NSTemporaryDirectory() + "sluice-tus-lock-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: options.stateDirectory!) }
        let endpoint = URL(string: "http://127.0.0.1:1/files/")!
        let client = TusClient(options: options)
        let source = TusSource(SyntheticByteSource(length: 1 << 20, seed: 3), identity: "synthetic:1048576:3")
        let store = TusStateStore(directory: options.stateDirectory)
        let thrown = try await throwing(whileHolding: [endpoint.absoluteString, source.identity], in: store) {
            _ = try await client.upload(source, to: endpoint)
        }
        let error = try #require(thrown as? TusError, "a second run went on, or failed otherwise: \(String(describing: thrown))")
        #expect(error.code == .inUse, "\(error)")
        #expect(error.message.contains("sluice pid \(getpid())"), "\(error)")
    }
}
