import Foundation
import Testing
import Sluice
import SluiceReceiver

#if canImport(Glibc)
import Glibc
#endif

/// Helpers for the loopback receiver's tests: running `/usr/bin/curl`, writing synthetic files,
/// and a raw TCP client for requests curl will not send.
package enum ReceiverTestSupport {
    package struct CurlResult {
        package init(status: Int32, stdout: String, stderr: String) { self.status = status; self.stdout = stdout; self.stderr = stderr }
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Runs `/usr/bin/curl` with `arguments` and waits for it.
    package static func curl(_ arguments: [String]) throws -> CurlResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--max-time", "60"] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CurlResult(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }

    /// The JSON object in `text`.
    package static func json(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(text)")
    }

    /// A new empty directory under the system's temporary directory.
    package static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "sluice-recv-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Writes `synthetic:LENGTH:SEED` to a new file and returns its path.
    package static func syntheticFile(length: Int64, seed: UInt64, in directory: String) throws -> String {
        let path = "\(directory)/synthetic-\(length)-\(seed).bin"
        let source = SyntheticByteSource(length: length, seed: seed)
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < length {
            let count = try buffer.withUnsafeMutableBytes { raw in
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[..<Int(min(Int64(raw.count), length - offset))]), at: offset)
            }
            try handle.write(contentsOf: buffer[..<count])
            offset += Int64(count)
        }
        return path
    }

    /// A blocking TCP client on 127.0.0.1, for requests curl will not send.
    package final class RawClient {
        package let fd: Int32

        package init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(connected == 0, "connect failed: errno \(errno)")
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        package func send(_ text: String) { send(Array(text.utf8)) }

        package func send(_ bytes: [UInt8]) {
            var sent = 0
            while sent < bytes.count {
                let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
                if count <= 0 { return }
                sent += count
            }
        }

        /// Stops sending (the server sees the end of the stream).
        package func finishSending() { _ = shutdown(fd, Int32(SHUT_WR)) }

        /// Everything the server sends until it closes the connection.
        package func readToEnd() -> String {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                out += buffer[..<count]
            }
            return String(decoding: out, as: UTF8.self)
        }

        package func close() { _ = Glibc.close(fd) }
    }

    /// What `/proc/self/fd/N` links to, e.g. `socket:[1234]`.
    package static func descriptorTarget(_ fd: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
    }

    /// Every target that this process's descriptors link to now.
    package static func allDescriptorTargets() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(names.compactMap { Int32($0).flatMap(descriptorTarget) })
    }

    /// How many of this process's threads are named `name`.
    package static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }
}
