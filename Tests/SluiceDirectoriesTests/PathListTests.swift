import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport

/// `PathList` (`--files-from`) and the external sort under it (`RecordSorter`): a list in any
/// order comes out in key order, each file once, with what a walk would say of it; a list with
/// a mistake is refused whole, with its first problem and a count.
@Suite(.serialized, .hangGuard)
struct PathListTests {
    typealias Scratch = DirectoryWalkTests.Scratch

    /// `bytes` as a list read from a file's descriptor.
    func list(_ bytes: [UInt8], root: String, separator: PathList.Separator = .newline, followsSymlinks: Bool = true) throws -> PathList {
        let path = NSTemporaryDirectory() + "sluice-list-\(UUID().uuidString.prefix(8))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let descriptor = open(path, O_RDONLY)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        return try PathList(reading: descriptor, root: root, separator: separator, followsSymlinks: followsSymlinks)
    }

    func refusal(_ bytes: [UInt8], root: String, separator: PathList.Separator = .newline) -> PathListError? {
        do {
            _ = try list(bytes, root: root, separator: separator)
            return nil
        } catch {
            return error as? PathListError
        }
    }

    func entries(_ list: PathList, order: KeyOrder = .s3) throws -> [WalkEntry] {
        let files = try list.files(in: order)
        return Array(AnyIterator { files.next() })
    }

    /// Out of order, with duplicates, `./`, `//` and an empty line: the walk's files, in the
    /// walk's order (both orders), each once, with the walk's sizes, times and inodes.
    @Test func aListComesOutAsTheWalkWouldYieldItsFiles() throws {
        let scratch = try Scratch()
        try DirectoryWalkTests().makeTree(scratch)
        for order in [KeyOrder.s3, .hierarchical] {
            let walked = Array(try DirectoryWalk(root: scratch.path, order: order)).compactMap { entry -> WalkEntry? in
                if case .file = entry { return entry }
                return nil
            }
            let names = walked.compactMap { entry -> String? in
                if case .file(let file) = entry { return file.relativePath }
                return nil
            }
            #expect(names.count >= 8)
            var text = names.reversed().map { "./" + $0.replacingOccurrences(of: "/", with: "//") }.joined(separator: "\n")
            text += "\n\n" + names[0] + "\n" + names[names.count / 2]
            let read = try list(Array(text.utf8), root: scratch.path)
            #expect(try entries(read, order: order) == walked, "\(order)")
        }
    }

    /// NUL-separated: a name may hold a newline; a newline list with a NUL is refused.
    @Test func nulSeparatedNamesMayHoldNewlines() throws {
        let scratch = try Scratch()
        try scratch.file("line\nbreak")
        try scratch.file("plain")
        let read = try list(Array("plain\0line\nbreak\0".utf8), root: scratch.path, separator: .nul)
        let names = try entries(read).compactMap { entry -> String? in
            if case .file(let file) = entry { return file.relativePath }
            return nil
        }
        #expect(names == ["line\nbreak", "plain"])
        #expect(refusal(Array("plain\0line\nbreak\0".utf8), root: scratch.path)?.problem == .holdsNUL)
    }

    /// Every path that is not a file below the root: the first one and how many.
    @Test func aListWithAMistakeIsRefusedWhole() throws {
        let scratch = try Scratch()
        try scratch.file("a")
        try scratch.file("dir/b")
        let root = DirectoryWalk.absolutePath(scratch.path)
        let missing = refusal(Array("a\nnope\ndir\n/etc/passwd\n../x\n.\n".utf8), root: scratch.path)
        #expect(missing == PathListError(problem: .notAFile(WalkIssue(path: root + "/nope", kind: .notFound)), count: 5))
        #expect("\(missing!)" == "\(root)/nope: no such file or directory (and 4 more paths not taken)")
        #expect(refusal(Array("dir\n".utf8), root: scratch.path)?.problem == .isADirectory(root + "/dir"))
        #expect(refusal(Array("/etc/passwd".utf8), root: scratch.path)?.problem == .absolute("/etc/passwd"))
        #expect(refusal(Array("dir/../a".utf8), root: scratch.path)?.problem == .leavesRoot("dir/../a"))
        #expect(refusal(Array("./".utf8), root: scratch.path)?.problem == .notAFilePath("./"))
        #expect(refusal([0x61, 0xFF, 0x0A], root: scratch.path)?.problem == .notUTF8("a\u{FFFD}"))
        let long = [UInt8](repeating: 0x61, count: PathList.maximumPathBytes + 1)
        #expect(refusal(long + [0x0A, 0x61], root: scratch.path) == PathListError(problem: .tooLong(start: String(repeating: "a", count: 64)), count: 1))
        // A path of exactly the limit is a path (it names no file here).
        let limit = [UInt8](repeating: 0x61, count: PathList.maximumPathBytes)
        #expect(
            refusal(limit, root: scratch.path)?.problem
                == .notAFile(WalkIssue(path: root + "/" + String(repeating: "a", count: PathList.maximumPathBytes), kind: .system(operation: "lstat", errno: ENAMETOOLONG))))
        // An empty list, and one of empty lines, are lists of nothing.
        #expect(try entries(list([], root: scratch.path)).isEmpty)
        #expect(try entries(list(Array("\n\n".utf8), root: scratch.path)).isEmpty)
    }

    /// Every list has the same bounds whatever it is read from (issue 37.5): a list that is not
    /// one ends at its first such entry. 1 MiB of NUL bytes (`/dev/zero`'s) is a NUL in a list of
    /// lines, and with `--null` separators with no path; a list over its byte limit ends there.
    /// Before: the NUL lines were read to their end as one overlong entry, the NUL-separated
    /// list was taken as an empty list, and no list had a total bound.
    @Test func aListThatIsNotOneEndsAtItsFirstViolation() throws {
        let scratch = try Scratch()
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        #expect(refusal(zeros, root: scratch.path) == PathListError(problem: .holdsNUL, count: 1))
        #expect(
            refusal(zeros, root: scratch.path, separator: .nul)
                == PathListError(problem: .noPath(bytes: PathList.maximumPathBytes + 1), count: 1))
        // A missing file counted before the violation is counted with it.
        #expect(refusal(Array("gone\n".utf8) + [0xFF, 0x0A, 0x61], root: scratch.path)?.count == 2)
        // The total: a valid list of 4 KiB, read under a limit of 1 KiB.
        try scratch.file("a", "x")
        let path = NSTemporaryDirectory() + "sluice-list-\(UUID().uuidString.prefix(8))"
        try Data(String(repeating: "a\n", count: 2048).utf8).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        #expect(throws: PathListError(problem: .tooLarge(limit: 1024), count: 1)) {
            try PathList(reading: descriptor, root: scratch.path, separator: .newline, limit: 1024)
        }
        #expect("\(PathListError(problem: .tooLong(start: "\u{1}\u{2}"), count: 1))".contains("\\u{01}"))
    }

    /// Character devices that never end: refused at their first violation, never read for
    /// ever (the suite's time limit is the hang's guard).
    @Test(arguments: ["/dev/zero", "/dev/urandom"], [PathList.Separator.newline, .nul])
    func aDeviceThatNeverEndsIsRefused(device: String, separator: PathList.Separator) throws {
        let scratch = try Scratch()
        let descriptor = open(device, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(throws: PathListError.self) { try PathList(reading: descriptor, root: scratch.path, separator: separator) }
    }

    /// The external sort against an in-memory sort, in both orders, with runs so small and a
    /// fan-in so low that runs of runs are merged (three levels), and duplicates kept adjacent.
    @Test(arguments: [KeyOrder.s3, .hierarchical])
    func theExternalSortSortsAsMemoryWould(order: KeyOrder) throws {
        var random = SeededGenerator(seed: testSeed("PathListTests.sort"))
        let alphabet: [UInt8] = Array("ab/-.z".utf8) + [0xC3, 0xA9]
        var records: [([UInt8], [UInt8])] = []
        for index in 0..<1_500 {
            let key = (0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            records.append((key, Array("\(index)".utf8)))
        }
        records += records.prefix(40)
        var sorter = try RecordSorter(order: order, runBytes: 300, fanIn: 3)
        for (key, payload) in records { try sorter.add(key: key, payload: payload) }
        let sorted = try sorter.finish()
        #expect(sorted.runs.count <= 3)
        var merge = sorted.merged()
        var got: [([UInt8], [UInt8])] = []
        while let record = try merge.next() { got.append(record) }
        #expect(got.count == records.count)
        #expect(got.map(\.0) == records.map(\.0).sorted { order.precedes($0, $1) })
        #expect(Set(got.map { $0.0 + [0] + $0.1 }) == Set(records.map { $0.0 + [0] + $0.1 }))
    }
}
