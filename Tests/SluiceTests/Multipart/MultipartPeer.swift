import Foundation
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver

/// `Tests/Peers/multipart_server.py` (python-multipart) on 127.0.0.1, started on port 0
/// and stopped by PID.
final class MultipartPeer {
    /// The parse result the peer answers for one part.
    struct Part: Decodable, Equatable, CustomStringConvertible {
        var name: String?
        var filename: String?
        var content_type: String?
        var headers: [[String]]
        var size: Int64
        var sha256: String

        var description: String {
            "\(name.debugDescription) \(filename.debugDescription) \(content_type.debugDescription) \(headers) \(size) \(sha256.prefix(12))"
        }
    }

    struct Answer: Decodable {
        var bytes: Int64
        var parts: [Part]
        var error: String?
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let port: Int
    let pid: Int32
    private let process: Process

    var url: String { "http://127.0.0.1:\(port)/upload" }

    /// Starts the peer and waits for its port line.
    ///
    /// - Throws: A message naming the missing piece (python3, python-multipart) when it does not start.
    init() throws {
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
    func stop() {
        kill(pid, SIGTERM)
        for _ in 0..<500 where process.isRunning {
            usleep(10_000)
        }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Sends `arguments` with `/usr/bin/curl` (`-F`, `--form-string`) and decodes the answer.
    func sendWithCurl(_ arguments: [String]) throws -> Answer {
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
    func send(_ body: MultipartBody, transport: TransportKind) async throws -> Answer {
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
