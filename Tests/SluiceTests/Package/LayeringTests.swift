import Foundation
import Testing

/// The library speaks in types: no string in `Sources/Sluice` names a command-line flag, and
/// each layer names nothing from the layers above it (ARCHITECTURE.md).
@Suite struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every Swift file under `Sources/<folder>`, as (path relative to the package, lines).
    static func sources(_ folder: String) throws -> [(path: String, lines: [Substring])] {
        let base = root.appendingPathComponent("Sources/\(folder)")
        let enumerator = try #require(FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil))
        var files: [(String, [Substring])] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            files.append((String(url.path.dropFirst(root.path.count + 1)), text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// The string literals on a line of Swift code (comment lines have none): the text between
    /// unescaped double quotes, interpolations included.
    static func stringLiterals(_ line: Substring) -> [String] {
        let code = line.drop { $0 == " " }
        if code.hasPrefix("//") { return [] }
        var literals: [String] = []
        var current: String?
        var escaped = false
        var previous: Character = " "
        for character in code {
            defer { previous = character }
            guard var text = current else {
                if character == "\"" { current = "" }
                if character == "/", previous == "/" { break }  // a trailing comment
                continue
            }
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                literals.append(text)
                current = nil
                continue
            }
            text.append(character)
            current = text
        }
        return literals
    }

    /// The library's modules: `Sluice` and the floors it re-exports (every `Sources/Sluice*`
    /// but the command line and the receiver).
    static func libraryModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { $0.hasPrefix("Sluice") && $0 != "SluiceCLI" && $0 != "SluiceReceiver" }.sorted()
    }

    @Test func noLibraryStringNamesAFlag() throws {
        let flag = try Regex("--[a-z]")
        var found: [String] = []
        let modules = try Self.libraryModules()
        #expect(modules.contains("Sluice") && modules.contains("SluicePrimitives"), "\(modules)")
        for (path, lines) in try modules.flatMap({ try Self.sources($0) }) {
            for (index, line) in lines.enumerated() {
                for literal in Self.stringLiterals(line) where literal.contains(flag) {
                    found.append("\(path):\(index + 1): \"\(literal)\"")
                }
            }
        }
        #expect(found.isEmpty, "library strings that name a flag:\n\(found.joined(separator: "\n"))")
    }

    /// The check above can fail: it sees a flag in a literal, and not in comments.
    @Test func theFlagCheckSeesFlags() throws {
        #expect(Self.stringLiterals(#"throw E("use --part-size 8MiB")"#) == ["use --part-size 8MiB"])
        #expect(Self.stringLiterals(#"    /// `--part-size` in a comment"#).isEmpty)
        #expect(Self.stringLiterals(#"let a = "--\(boundary)--\r\n""#) == [#"--\(boundary)--\r\n"#])
        #expect(Self.stringLiterals(#"f("a \"q\" b") // "--not-code""#) == [#"a \"q\" b"#])
    }

    /// Lower layers name nothing from higher ones (one module, so the compiler cannot say it).
    @Test(arguments: [
        ("ByteSources", ["UploadBody", "UploadRequest", "UploadOptions", "Uploader", "Transport", "BoundStreamPair", "TusClient", "S3Client"]),
        ("BoundStreams", ["UploadRequest", "UploadOptions", "Uploader", "CurlTransport", "URLSessionTransport", "TusClient", "S3Client"]),
        ("Requests", ["CurlTransport", "URLSessionTransport", "TransferEngine", "Uploader", "TusClient", "S3Client", "MultipartBody"]),
        ("Transports", ["Uploader(", "TusClient", "S3Client", "MultipartBody", "PartScheduler", "PartTracker", "RequestBudget"]),
        ("Engine", ["Uploader(", "TusClient", "S3Client", "MultipartBody", "PartScheduler", "PartTracker", "RequestBudget"]),
        ("Scheduling", ["Uploader(", "TusClient", "S3Client", "MultipartBody"]),
        ("Signing", ["Uploader(", "TusClient", "S3Client", "CurlTransport", "URLSessionTransport"]),
    ])
    func layersPointDown(_ layer: String, _ higher: [String]) throws {
        var found: [String] = []
        for (path, lines) in try Self.sources("Sluice/\(layer)") {
            for (index, line) in lines.enumerated() where !line.drop(while: { $0 == " " }).hasPrefix("//") {
                for name in higher where line.contains(name) { found.append("\(path):\(index + 1): \(name)") }
            }
        }
        #expect(found.isEmpty, "\(layer) reaches up:\n\(found.joined(separator: "\n"))")
    }
}
