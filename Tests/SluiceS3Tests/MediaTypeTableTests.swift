import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `MediaTypeTable` is Python's `mimetypes.guess_type` with the tables Python reads here (what
/// `aws s3 cp` sends as Content-Type): hand-picked names and random ones, checked against
/// Python itself (Tests/Peers/mimetypes_peer.py), and a `mime.types` file of its own.
@Suite(.hangGuard) struct MediaTypeTableTests {
    static let names = [
        "a.txt", "A.TXT", "photo.JPG", "photo.Jpeg", "README", "Makefile", ".bashrc", ".txt", "..txt", "x.", "x..",
        "archive.tar.gz", "archive.TAR.GZ", "archive.tar.GZ", "a.tgz", "a.TGZ", "a.svgz", "a.gz", "a.Z", "a.z", "a.tar.Z",
        "a.tar.bz2", "a.txz", "a.tbz2", "a.br", "a.tar.xz", "a.json", "a.mjs", "a.webp", "a.md", "a.docx", "a.deb", "a.mkv",
        "a.yaml", "a.wasm", "dir.d/file", "dir.txt/file", "dir/.hidden.png", "dir/..", "data/x.csv", "café.PNG", "x.\u{130}",
        "data:text/html,x", "data:,x", "DATA:x/y;base64,zz", "data:a=b/c,x", "data:nocomma", "s3:x.png", "x:.txt", "a:b/c.html",
        "/abs/path/index.HTML", "./rel/style.css", "dir.TGZ/", "a.txt/..", "x/./y.json/.", "a b.pdf", "tab\t.js", "new\nline.svg",
    ]

    @Test func guessesWhatPythonGuesses() async throws {
        var random = SeededGenerator(seed: testSeed("MediaTypeTableTests"))
        let pieces = ["a", "tar", "gz", "GZ", "Z", "tgz", "TGZ", "txt", "TXT", "json", "png", "html", "md", ".", ".", ".", "/", ":", "data", ",", ";", "=", "x/y", "é"]
        var names = Self.names
        for _ in 0..<2_000 {
            names.append((0..<Int(random.next() % 7)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined())
        }
        let file = try Self.mimeTypesFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let answers = try #require(try await runPythonPeer("mimetypes_peer.py", input: ["names": names, "files": [file]]) as? [String: [Any]])
        let custom = MediaTypeTable(files: [file])
        let guesses: [(String, [String?])] = [
            ("guess", names.map { MediaTypeTable.system.guessType($0) }),
            ("awscli", names.map { MediaTypeTable.system.contentType(forPath: $0) }),
            ("custom", names.map { custom.guessType($0) }),
        ]
        for (kind, ours) in guesses {
            let expected = answers[kind] ?? []
            #expect(expected.count == names.count)
            var disagreements = 0
            for (index, python) in zip(expected.indices, expected) where ours[index] != python as? String {
                disagreements += 1
                if disagreements <= 5 { Issue.record("\(kind) '\(names[index])': Python says \(python), Sluice \(ours[index] ?? "nil")") }
            }
            #expect(disagreements == 0, "\(kind)")
        }
        // The names cover each kind of answer: a type from Python's table, from /etc/mime.types, none.
        #expect(MediaTypeTable.system.contentType(forPath: "archive.tar.gz") == "application/x-tar")
        #expect(MediaTypeTable.system.contentType(forPath: "A.TXT") == "text/plain")
        #expect(MediaTypeTable.system.contentType(forPath: ".bashrc") == nil)
        #expect(custom.guessType("a.txt") == "text/x-mine")
    }

    /// A `mime.types` file with what Python's reader meets: comments, CRLF and lone CR line ends,
    /// tabs, an extension given twice, an upper-case one, a type alone, an override.
    static func mimeTypesFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mime-\(UUID().uuidString).types").path
        let text = "# comment\ntext/x-mine\ttxt  md # trailing words json\r\ntext/x-upper MD\rapplication/x-alone\n\n  image/x-second png\nimage/x-third png\nx/y#z a#b c\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aFileTooLargeOrNotRegularIsLeftOutWithoutWaiting() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mime-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo(directory + "/fifo", 0o600) == 0)
        let large = directory + "/large"
        try Data(("text/x-large bin\n" + String(repeating: "#", count: MediaTypeTable.fileLimit)).utf8).write(to: URL(fileURLWithPath: large))
        let small = directory + "/small"
        try Data("text/x-large bin\n".utf8).write(to: URL(fileURLWithPath: small))
        // Opening the FIFO waits for no writer; the large file is not read at all.
        #expect(MediaTypeTable(files: [directory + "/fifo", large, directory + "/missing"]).guessType("a.bin") == "application/octet-stream")
        #expect(MediaTypeTable(files: [small]).guessType("a.bin") == "text/x-large")
    }

    @Test func anExplicitTypeWinsAndGuessingIsAChoice() {
        var options = S3ObjectOptions()
        #expect(options.forFile(atPath: "/tmp/a.html").contentType == nil)
        options.guessesContentType = true
        #expect(options.forFile(atPath: "/tmp/a.html").contentType == "text/html")
        #expect(options.forFile(atPath: "/tmp/README").contentType == nil)
        options.contentType = "text/x-given"
        #expect(options.forFile(atPath: "/tmp/a.html").contentType == "text/x-given")
    }
}
