import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#endif

/// `Tests/Peers/curl_sink.py` (or another peer script there that prints its port first) on
/// 127.0.0.1, started for one test and stopped by PID.
package final class CurlSink {
    package let process = Process()
    package let port: Int

    /// What the sink saw: one JSON object per answered request.
    package struct Report: Decodable {
        package init(method: String, path: String, count: Int64, sha256: String, chunked: Bool, headers: [String: String], peer: Int?) {
            self.method = method; self.path = path; self.count = count; self.sha256 = sha256; self.chunked = chunked; self.headers = headers; self.peer = peer
        }
        package var method: String
        package var path: String
        package var count: Int64
        package var sha256: String
        package var chunked: Bool
        package var headers: [String: String]
        /// The client's port: one per connection.
        package var peer: Int?
    }

    package init(script name: String = "curl_sink.py", arguments: [String] = []) throws {
        let script = URL(fileURLWithPath: peersDirectory).appendingPathComponent(name)
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path] + arguments
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                process.terminate()
                throw UploadError(.transport, "\(name) exited before printing its port")
            }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw UploadError(.transport, "\(name) printed no port")
        }
        self.port = port
    }

    /// Stops the sink (SIGKILL to its PID: it keeps nothing) and waits for it.
    package func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    package func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    package static func report(_ response: UploadResponse) throws -> Report {
        try JSONDecoder().decode(Report.self, from: response.body)
    }
}

/// Bytes of a synthetic source written into a pipe by a thread; the read end as a sequential source.
package func syntheticPipe(_ source: SyntheticByteSource, length: BodyLength = .unknown) -> FileDescriptorStream {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    let (readEnd, writeEnd) = (fds[0], fds[1])
    let thread = Thread {
        var buffer = [UInt8](repeating: 0, count: 50_021)
        var offset: Int64 = 0
        while offset < source.length {
            let count = buffer.withUnsafeMutableBytes { (try? source.read(into: $0, at: offset)) ?? 0 }
            var done = 0
            while done < count {
                let written = buffer.withUnsafeBytes { write(writeEnd, $0.baseAddress! + done, count - done) }
                if written <= 0 { break }
                done += written
            }
            offset += Int64(count)
        }
        close(writeEnd)
    }
    thread.start()
    return FileDescriptorStream(fd: readEnd, length: length, name: "test pipe")
}

/// A producer that hands out `prefix` bytes, then blocks until `release()`.
package final class StallingSource: SequentialByteSource, @unchecked Sendable {
    // @unchecked: `sent` is touched only by the single reader thread; the semaphores are thread-safe.
    package let length: BodyLength = .unknown
    package let prefix: Int
    package let stalled = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private var sent = 0

    package init(prefix: Int) { self.prefix = prefix }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if sent < prefix {
            let count = min(buffer.count, prefix - sent)
            buffer.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0x5A, count: count)
            sent += count
            return count
        }
        stalled.signal()
        gate.wait()
        return 0
    }

    package func release() { gate.signal() }
}
