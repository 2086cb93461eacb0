import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sluice
import SluiceReceiver
#if canImport(Glibc)
import Glibc
#endif

extension CurlSink {
    /// `Tests/Peers/parts_server.py`'s `/stats`.
    package struct Stats: Decodable {
        package init(connections: Int, requests: Int, attempts: [String: Int], peak_held: Int, peak_lag: Double) {
            self.connections = connections; self.requests = requests; self.attempts = attempts; self.peak_held = peak_held; self.peak_lag = peak_lag
        }
        package var connections: Int
        package var requests: Int
        package var attempts: [String: Int]
        /// The most requests held at once.
        package var peak_held: Int
        /// The longest time from a part's preparation to its arrival, in seconds.
        package var peak_lag: Double
    }

    /// The counts of the parts server `peer`.
    package func stats() async throws -> Stats {
        let request = try UploadRequest(url: url("/stats"), method: "GET")
        let response = try await CurlTransport().send(request, body: .bytes(MemoryByteSource([UInt8]())), options: UploadOptions()) { _ in }
        return try JSONDecoder().decode(Stats.self, from: response.body)
    }
}
