import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `DirectoryWalk` and `PathFilter`: the files of a tree in key order, issues for what cannot
/// be sent, the walk lazy, and the same files and keys as `aws s3 cp --recursive --dryrun`.
@Suite(.serialized)
struct DirectoryWalkTests {
    /// A scratch directory, removed at the end.
    final class Scratch {
        let path: String
        init() throws {
            path = NSTemporaryDirectory() + "sluice-walk-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        func file(_ relative: String, _ text: String = "x") throws {
            let full = path + "/" + relative
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: full))
        }
        func link(_ relative: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(atPath: path + "/" + relative, withDestinationPath: target)
        }
    }

    /// A tree with the names the AWS CLI's users have: spaces, unicode, `%`, `+`, `#`, an empty
    /// file, nesting, a symlinked directory and file; names that sort differently by bytes than
    /// by directory-first order (`b.txt` before `b/`: `.` is 0x2E, `/` 0x2F).
    func makeTree(_ scratch: Scratch) throws {
        try scratch.file("a.txt")
        try scratch.file("b.txt")
        try scratch.file("b/ü%+#.txt")
        try scratch.file("b-c/one")
        try scratch.file("sub dir/x y.txt")
        try scratch.file("sub dir/deeper/z", "")
        try scratch.file("empty", "")
        try scratch.file("日本/語.jpg")
        try scratch.file("Zeta.JPG")
        try scratch.link("link", to: "b")
        try scratch.link("file-link", to: "a.txt")
    }

    func files(_ walk: DirectoryWalk) -> [String] {
        walk.compactMap { if case .file(let file) = $0 { file.relativePath } else { nil } }
    }

    /// A symlink into /proc (or /sys) is a file whose size is not its length: passed over on
    /// purpose, named once, with that reason (before: walked as a file, then failed as `PATH:
    /// PATH: is not a regular file any more`).
    @Test func aSymlinkIntoProcIsPassedOverNamedOnce() throws {
        let scratch = try Scratch()
        try scratch.file("a.txt")
        try scratch.link("status", to: "/proc/self/status")
        let entries = Array(try DirectoryWalk(root: scratch.path))
        #expect(files(try DirectoryWalk(root: scratch.path)) == ["a.txt"])
        let issues = entries.compactMap { if case .issue(let issue) = $0 { issue } else { nil } }
        #expect(issues.count == 1)
        let issue = try #require(issues.first)
        #expect(issue.isDeliberate)
        #expect(issue.description == scratch.path + "/status: is a file of /proc or /sys (its size is not its length), skipped")
    }

    @Test func yieldsFilesInKeyOrder() throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        let walk = try DirectoryWalk(root: scratch.path)
        #expect(
            files(walk) == [
                "Zeta.JPG", "a.txt", "b-c/one", "b.txt", "b/ü%+#.txt", "empty", "file-link", "link/ü%+#.txt",
                "sub dir/deeper/z", "sub dir/x y.txt", "日本/語.jpg",
            ])
        for case .file(let file) in try DirectoryWalk(root: scratch.path) {
            #expect(file.path == scratch.path + "/" + file.relativePath)
            var info = stat()
            #expect(stat(file.path, &info) == 0)
            #expect(file.size == Int64(info.st_size) && file.inode == UInt64(info.st_ino))
        }
        let unfollowed = try DirectoryWalk(root: scratch.path, followsSymlinks: false)
        #expect(files(unfollowed) == ["Zeta.JPG", "a.txt", "b-c/one", "b.txt", "b/ü%+#.txt", "empty", "sub dir/deeper/z", "sub dir/x y.txt", "日本/語.jpg"])
        let issues = unfollowed.compactMap { if case .issue(let issue) = $0 { issue } else { nil } }
        #expect(issues.map(\.kind) == [.symlinkNotFollowed, .symlinkNotFollowed])
        #expect(issues.allSatisfy { $0.isDeliberate })
    }

    @Test func reportsWhatItCannotSend() throws {
        let scratch = try Scratch()
        try scratch.file("a/ok")
        try scratch.link("a/up", to: "..")
        try scratch.link("a/self", to: ".")
        try scratch.link("broken", to: "nowhere")
        #expect(mkfifo(scratch.path + "/fifo", 0o600) == 0)
        let odd = scratch.path + "/bad\u{FF}name"
        let created = odd.withCString { _ in
            // A name that is not UTF-8: the bytes 'bad', 0xFF, 'name'.
            var bytes = Array((scratch.path + "/bad").utf8) + [0xFF] + Array("name".utf8) + [0]
            return bytes.withUnsafeMutableBufferPointer { creat(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 0o600) }
        }
        #expect(created >= 0)
        if created >= 0 { close(created) }
        let entries = Array(try DirectoryWalk(root: scratch.path))
        var kinds: [String: WalkIssue.Kind] = [:]
        var found: [String] = []
        for entry in entries {
            switch entry {
            case .file(let file): found.append(file.relativePath)
            case .issue(let issue): kinds[String(issue.path.dropFirst(scratch.path.count + 1))] = issue.kind
            }
        }
        // The loops are reported once each, never walked: the walk ends.
        #expect(found == ["a/ok"])
        #expect(kinds["a/up"] == .symlinkLoop)
        #expect(kinds["a/self"] == .symlinkLoop)
        #expect(kinds["broken"] == .brokenSymlink)
        #expect(kinds["fifo"] == .specialFile(kind: "FIFO"))
        #expect(kinds["bad\u{FFFD}name"] == .nameNotUTF8)
        #expect(kinds.count == 5)
        #expect(WalkIssue(path: "p", kind: .symlinkLoop).isDeliberate)
        #expect(!WalkIssue(path: "p", kind: .brokenSymlink).isDeliberate)
    }

    @Test func refusesARootThatIsNoDirectory() throws {
        let scratch = try Scratch()
        try scratch.file("plain")
        #expect(throws: WalkIssue(path: scratch.path + "/missing", kind: .notFound)) { try DirectoryWalk(root: scratch.path + "/missing") }
        #expect(throws: WalkIssue(path: scratch.path + "/plain", kind: .notADirectory)) { try DirectoryWalk(root: scratch.path + "/plain") }
        #expect(try DirectoryWalk(root: scratch.path + "/./x/../").root == scratch.path)
        #expect(DirectoryWalk.absolutePath("//a/./b/../c//") == "/a/c")
        #expect(DirectoryWalk.absolutePath("/..") == "/")
    }

    /// A directory is listed when the walk reaches it, not before: a file added to a later
    /// directory after the first file was taken is still found.
    @Test func listsEachDirectoryWhenItGetsThere() throws {
        let scratch = try Scratch()
        try scratch.file("a/first")
        try scratch.file("z/last")
        var walk = try DirectoryWalk(root: scratch.path)
        guard case .file(let first) = walk.next() else { Issue.record("no first file"); return }
        #expect(first.relativePath == "a/first")
        try scratch.file("z/added later")
        var rest: [String] = []
        while let entry = walk.next() { if case .file(let file) = entry { rest.append(file.relativePath) } }
        #expect(rest == ["z/added later", "z/last"])
    }

    /// The files, keys and skipped paths `aws s3 cp --recursive --dryrun` gives for the same
    /// tree and filters (the AWS CLI is the independent implementation).
    @Test(arguments: [
        [] as [[String]],
        [["exclude", "*"], ["include", "*.txt"]],
        [["exclude", "*"], ["include", "b*"], ["exclude", "*.txt"], ["include", "b/*"]],
        [["exclude", "sub dir/*"], ["include", "*/deeper/*"]],
        [["include", "*"], ["exclude", "[a-b]*"], ["exclude", "?eta.*"]],
        [["exclude", "*%+#*"], ["exclude", "日本/*"]],
    ])
    func agreesWithTheAWSCLI(_ filters: [[String]]) async throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        #expect(mkfifo(scratch.path + "/fifo", 0o600) == 0)
        let answer = try #require(
            try await runPythonPeer(
                "awscli_walk_peer.py",
                input: [
                    "root": scratch.path, "destination": "s3://bucket/prefix/", "filters": filters,
                ]) as? [String: Any])
        let expected = try #require(answer["uploads"] as? [[String]])
        let filter = PathFilter(filters.map { $0[0] == "include" ? .include(GlobPattern($0[1])) : .exclude(GlobPattern($0[1])) })
        var uploads: [[String]] = []
        var skipped: [String] = []
        for entry in try DirectoryWalk(root: scratch.path) {
            switch entry {
            case .file(let file) where filter.includes(file.relativePath, root: scratch.path):
                uploads.append([file.path, "prefix/" + file.relativePath])
            case .file: break
            case .issue(let issue): skipped.append(issue.path)
            }
        }
        #expect(uploads == expected)
        #expect(skipped == (answer["skipped"] as? [String]))
    }
}
