import Foundation
import Sluice
import SluiceReceiver

/// `Tests/Peers/multipart_server.py` (python-multipart) on 127.0.0.1, started on port 0
/// and stopped by PID.
package final class MultipartPeer {
    /// The parse result the peer answers for one part.
    package struct Part: Decodable, Equatable, CustomStringConvertible {
        package init(name: String?, filename: String?, content_type: String?, headers: [[String]], size: Int64, sha256: String) {
            self.name = name; self.filename = filename; self.content_type = content_type; self.headers = headers; self.size = size; self.sha256 = sha256
        }
        package var name: String?
        package var filename: String?
        package var content_type: String?
        package var headers: [[String]]
        package var size: Int64
        package var sha256: String

        package var description: String {
            "\(name.debugDescription) \(filename.debugDescription) \(content_type.debugDescription) \(headers) \(size) \(sha256.prefix(12))"
        }
    }

    package struct Answer: Decodable {
        package init(bytes: Int64, parts: [Part], error: String?) { self.bytes = bytes; self.parts = parts; self.error = error }
        package var bytes: Int64
        package var parts: [Part]
        package var error: String?
    }

    package static var repositoryRoot: URL { SluiceTestSupport.repositoryRoot }

    package let port: Int
    package let pid: Int32
    private let process: Process

    package var url: String { "http://127.0.0.1:\(port)/upload" }

    /// Starts the peer and waits for its port line.
    ///
    /// - Throws: A message naming the missing piece (python3, python-multipart) when it does not start.
    package init() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", MultipartPeer.repositoryRoot.appendingPathComponent("Tests/Peers/multipart_server.py").path, "--port", "0"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var line: [UInt8] = []
        while !line.contains(0x0A) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += data
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else {
            process.waitUntilExit()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw PeerError("multipart_server.py did not start (needs python3 and `pip install python-multipart`): \(stderr)")
        }
        self.port = port
        self.pid = process.processIdentifier
        self.process = process
    }

    /// Stops the peer by its PID and waits for it: SIGTERM, then SIGKILL after 5 s.
    package func stop() {
        kill(pid, SIGTERM)
        for _ in 0..<500 where process.isRunning {
            usleep(10_000)
        }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Sends `arguments` with `/usr/bin/curl` (`-F`, `--form-string`) and decodes the answer.
    package func sendWithCurl(_ arguments: [String]) throws -> Answer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--fail-with-body"] + arguments + [url]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PeerError("curl exited \(process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        return try JSONDecoder().decode(Answer.self, from: data)
    }

    /// Sends `body` with Sluice's uploader and decodes the answer.
    package func send(_ body: MultipartBody, transport: TransportKind) async throws -> Answer {
        let request = try UploadRequest(url: url, headers: [HTTPHeader(name: "Content-Type", value: body.contentType)])
        let response = try await Uploader(transport: transport).upload(request, body: .bytes(body))
        guard response.status == 200 else {
            throw PeerError("status \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        guard response.bytesSent == body.length else {
            throw PeerError("sent \(response.bytesSent) of \(body.length) bytes")
        }
        return try JSONDecoder().decode(Answer.self, from: response.body)
    }
}
