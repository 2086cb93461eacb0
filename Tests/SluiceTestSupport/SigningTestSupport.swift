import Foundation
import Sluice
import SluiceReceiver

/// `shared/vectors`: beside the checkout (`../shared/vectors` from the package root, as CI has
/// it) or beside any ancestor of this file (a worktree nested deeper).
package let sharedVectorsDirectory: String? = {
    var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while url.path != "/" {
        let candidate = url.appendingPathComponent("shared/vectors")
        if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("README.md").path) { return candidate.path }
        url.deleteLastPathComponent()
    }
    return nil
}()

/// Runs `python3 Tests/Peers/<script> INPUT.json` and returns its stdout, parsed as JSON.
///
/// Waits for the process without holding a thread (the cooperative pool has one per core).
///
/// - Throws: `PeerFailure` when the script exits non-zero (its stderr in the message) or
///   runs past `timeout` (it is then killed by PID).
package func runPythonPeer(_ script: String, input: Any, timeout: Double = 60) async throws -> Any {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-peer-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inputURL = directory.appendingPathComponent("input.json")
    try JSONSerialization.data(withJSONObject: input).write(to: inputURL)
    let outputURL = directory.appendingPathComponent("output.json")
    let errorURL = directory.appendingPathComponent("stderr.txt")
    _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", peersDirectory + "/" + script, inputURL.path]
    process.standardOutput = try FileHandle(forWritingTo: outputURL)
    process.standardError = try FileHandle(forWritingTo: errorURL)
    let (ended, continuation) = AsyncStream<Int32>.makeStream()
    process.terminationHandler = {
        continuation.yield($0.terminationStatus); continuation.finish()
    }
    try process.run()
    let pid = process.processIdentifier
    let watchdog = Task {
        try await Task.sleep(for: .seconds(timeout))
        kill(pid, SIGKILL)
    }
    var iterator = ended.makeAsyncIterator()
    let status = await iterator.next() ?? -1
    let timedOut = process.terminationReason == .uncaughtSignal
    watchdog.cancel()
    guard status == 0 else {
        let text = (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
        throw PeerFailure(description: timedOut ? "\(script) did not finish within \(timeout) s" : "\(script) exited \(status): \(text.suffix(2000))")
    }
    return try JSONSerialization.jsonObject(with: Data(contentsOf: outputURL))
}

package struct PeerFailure: Error, CustomStringConvertible {
    package init(description: String) { self.description = description }
    package var description: String
}

/// Decodes an aws-chunked body into its chunks (size, signature extension, data) and trailer lines.
package struct DecodedChunks {
    package var chunks: [(size: Int, signature: String?, data: [UInt8])] = []
    package var trailers: [String] = []

    package init(_ bytes: [UInt8]) throws {
        var index = 0
        func line() throws -> String {
            var end = index
            while end + 1 < bytes.count, !(bytes[end] == 0x0D && bytes[end + 1] == 0x0A) { end += 1 }
            guard end + 1 < bytes.count else { throw PeerFailure(description: "no CRLF after byte \(index)") }
            let text = String(decoding: bytes[index..<end], as: UTF8.self)
            index = end + 2
            return text
        }
        while true {
            let header = try line()
            let parts = header.split(separator: ";", maxSplits: 1)
            guard let size = Int(parts[0], radix: 16) else { throw PeerFailure(description: "bad chunk header '\(header)'") }
            let signature = parts.count > 1 ? String(parts[1].dropFirst("chunk-signature=".count)) : nil
            guard index + size <= bytes.count else { throw PeerFailure(description: "chunk overruns the body") }
            let data = Array(bytes[index..<index + size])
            index += size
            chunks.append((size, signature, data))
            if size == 0 { break }
            guard try line().isEmpty else { throw PeerFailure(description: "no CRLF after chunk data") }
        }
        while true {
            let trailer = try line()
            if trailer.isEmpty { break }
            trailers.append(trailer)
        }
        guard index == bytes.count else { throw PeerFailure(description: "\(bytes.count - index) bytes after the body's end") }
    }
}
