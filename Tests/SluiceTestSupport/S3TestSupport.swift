import Foundation
import Testing
import Sluice
import SluiceReceiver

/// Runs `Tests/Peers/s3_botocore_peer.py` once with a JSON request and returns its JSON answer.
///
/// - Throws: When python3 or botocore is missing, or the peer fails.
package func s3BotocorePeer(_ request: [String: Any]) throws -> [[String: Any]] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", peersDirectory + "/s3_botocore_peer.py"]
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let stderr = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0, let answer = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
        throw S3PeerError("s3_botocore_peer.py failed (needs python3 with botocore): \(String(decoding: stderr, as: UTF8.self))")
    }
    return answer
}

package struct S3PeerError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// A fresh empty directory under the temporary directory.
package func s3TemporaryDirectory(_ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "sluice-\(name)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
