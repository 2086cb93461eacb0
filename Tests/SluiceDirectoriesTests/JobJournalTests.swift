import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport

/// `JobJournal`: what a job finished survives `kill -9`, a line cut short is dropped, and a
/// record of another job or a damaged one is refused in one line, read within a bound.
struct JobJournalTests {
    func scratchPath() -> String {
        NSTemporaryDirectory() + "sluice-journal-\(UUID().uuidString.prefix(8))/nested/job.journal"
    }

    func entry(_ number: Int) -> JobJournal.Entry {
        JobJournal.Entry(name: "dir/file \(number) ü%+#", size: Int64(number), device: 1, inode: UInt64(number), modified: 7, changed: 9, result: "\"etag\(number)\"")
    }

    /// An entry's line is byte for byte what `JSONEncoder` writes (sorted keys, slashes kept),
    /// for names with quotes, backslashes, control characters and non-ASCII, and reads back.
    @Test(arguments: ["dir/file ü%+#", "a\"b\\c/d", "tab\there\nnew\r\u{08}\u{0C}\u{01}\u{1F}\u{7F}", "", "🎉/ﬁ/\u{2028}"])
    func linesAreWhatJSONEncoderWrites(_ name: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // An entry written before the change time was recorded has none.
        for changed in [Int64(-3), nil] {
            let value = JobJournal.Entry(name: name, size: 1 << 40, device: .max, inode: 0, modified: -5, changed: changed, result: "\"etag/\\\"")
            #expect(value.line == Array(try encoder.encode(value)) + [0x0A])
            #expect(try JSONDecoder().decode(JobJournal.Entry.self, from: Data(value.line.dropLast())) == value)
        }
    }

    @Test func keepsWhatWasFinishedAcrossOpens() throws {
        let path = scratchPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let journal = try JobJournal(path: path, job: "job A")
        #expect(journal.count == 0)
        for number in 0..<50 { try journal.append(entry(number)) }
        try journal.close()
        #expect(throws: JobJournalError(path: path, problem: .closed)) { try journal.append(entry(99)) }
        let again = try JobJournal(path: path, job: "job A")
        #expect(again.count == 50)
        #expect(again.entry("dir/file 7 ü%+#") == entry(7))
        #expect(again.entry("dir/file 50 ü%+#") == nil)
        let file = WalkedFile(path: "/x", relativePath: "dir/file 7 ü%+#", size: 7, modified: 7, changed: 9, device: 1, inode: 7)
        #expect(entry(7).matches(file))
        var changed = file
        changed.modified = 8
        #expect(!entry(7).matches(changed))
        var old = entry(7)
        old.changed = nil
        #expect(!old.matches(file))
        again.remove()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// The job's way: each line written at once with the sync left to the caller, then closed
    /// (which syncs): every line is there when the journal is opened again, and a line after
    /// the close is refused.
    @Test func linesAppendedLeavingTheSyncAreKept() throws {
        let path = scratchPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let journal = try JobJournal(path: path, job: "job A")
        for number in 0..<50 {
            if try journal.appendLeavingSync(entry(number)) { try journal.syncIfDue() }
        }
        try journal.syncIfDue()  // not due, or due: either way nothing is lost
        try journal.close()
        #expect(throws: JobJournalError(path: path, problem: .closed)) { _ = try journal.appendLeavingSync(entry(99)) }
        let again = try JobJournal(path: path, job: "job A")
        #expect(again.count == 50)
        #expect(again.entry("dir/file 49 ü%+#") == entry(49))
        again.remove()
    }

    /// A file rewritten in place at the same size with its modification time put back (`cp -p`,
    /// `rsync -t`, `touch -r`) is not the file the entry recorded: its change time moved.
    @Test(.hangGuard) func aRewriteWithItsModificationTimePutBackIsAChange() throws {
        let directory = NSTemporaryDirectory() + "sluice-journal-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/f"
        try Data("old bytes".utf8).write(to: URL(fileURLWithPath: path))
        func walked() throws -> WalkedFile {
            var walk = try DirectoryWalk(root: directory)
            guard case .file(let file) = walk.next() else { throw WalkIssue(path: path, kind: .notFound) }
            return file
        }
        let sent = try walked()
        let entry = JobJournal.Entry(sent, result: "\"e\"")
        #expect(entry.matches(sent))
        // Rewritten in place, then the modification time put back, until the change time (set
        // from the kernel's coarse clock) has moved on from the one recorded.
        var now = sent
        while now.changed == sent.changed {
            let descriptor = open(path, O_WRONLY | O_TRUNC)
            try #require(descriptor >= 0)
            _ = write(descriptor, "new bytes", 9)
            close(descriptor)
            var times = [
                timespec(tv_sec: Int(sent.modified / 1_000_000_000), tv_nsec: Int(sent.modified % 1_000_000_000)),
                timespec(tv_sec: Int(sent.modified / 1_000_000_000), tv_nsec: Int(sent.modified % 1_000_000_000)),
            ]
            try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
            now = try walked()
        }
        #expect(now.size == sent.size && now.modified == sent.modified && now.inode == sent.inode)
        #expect(!entry.matches(now))
    }

    /// Two names that differ only in Unicode normalisation are two files and two S3 keys: each
    /// has its own entry, found by its own bytes.
    @Test func namesAreKeyedByTheirExactBytes() throws {
        let path = scratchPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // Swift's == would merge them
        let journal = try JobJournal(path: path, job: "job A")
        for (index, name) in [composed, decomposed].enumerated() {
            try journal.append(
                JobJournal.Entry(
                    name: name, size: Int64(index), device: 1, inode: UInt64(index), modified: 1, changed: 1,
                    result: "\"\(index)\""))
        }
        try journal.close()
        let again = try JobJournal(path: path, job: "job A")
        #expect(again.count == 2)
        #expect(again.take(decomposed).map { Array($0.name.utf8) } == Array(decomposed.utf8))
        #expect(again.take(composed).map { Array($0.name.utf8) } == Array(composed.utf8))
        #expect(again.count == 0)
    }

    @Test func dropsALineCutShortAndRefusesDamage() throws {
        let path = scratchPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let journal = try JobJournal(path: path, job: "job A")
        try journal.append(entry(1))
        try journal.append(entry(2))
        try journal.close()
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        // A crash in the middle of the third line.
        let torn = whole + Data(#"{"device":1,"inode":3,"modi"#.utf8)
        try torn.write(to: URL(fileURLWithPath: path))
        let reopened = try JobJournal(path: path, job: "job A")
        #expect(reopened.count == 2)
        try reopened.append(entry(3))
        try reopened.close()
        #expect(try JobJournal(path: path, job: "job A").count == 3)

        #expect(throws: JobJournalError(path: path, problem: .anotherJob("job A"))) { try JobJournal(path: path, job: "job B") }

        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        lines[2] = "not json"
        try lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: JobJournalError(path: path, problem: .corrupt(line: 3, "not an entry"))) { try JobJournal(path: path, job: "job A") }

        // One endless line: refused after the bound, not read whole.
        try (whole + Data(repeating: 0x41, count: 4 << 20)).write(to: URL(fileURLWithPath: path))
        #expect(throws: JobJournalError(path: path, problem: .corrupt(line: 4, "a line longer than \(JobJournal.maximumLineLength) bytes"))) {
            try JobJournal(path: path, job: "job A")
        }
        try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: JobJournalError(path: path, problem: .corrupt(line: 1, "not a job record"))) { try JobJournal(path: path, job: "job A") }
    }

    @Test func refusesADirectoryItCannotMake() throws {
        let scratch = NSTemporaryDirectory() + "sluice-journal-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try Data("a file".utf8).write(to: URL(fileURLWithPath: scratch))
        #expect(throws: JobJournalError.self) { try JobJournal(path: scratch + "/under/job.journal", job: "j") }
        do {
            _ = try JobJournal(path: scratch + "/under/job.journal", job: "j")
        } catch {
            #expect(error.description.contains("Not a directory"), "\(error)")
        }
    }

    static let killedPath = ProcessInfo.processInfo.environment["SLUICE_JOURNAL_PATH"] ?? ""

    /// The child: appends 1,000 entries, then dies by SIGKILL without closing the journal.
    @Test(.enabled(if: Isolated.isChild("journalKilledChild")))
    func journalKilledChild() throws {
        let journal = try JobJournal(path: Self.killedPath, job: "killed")
        for number in 0..<1_000 { try journal.append(entry(number)) }
        kill(getpid(), SIGKILL)
    }

    /// Every entry appended before `kill -9` is there when the journal is opened again.
    @Test(.enabled(if: !Isolated.inChild))
    func everyAppendSurvivesKill9() async throws {
        let path = scratchPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        setenv("SLUICE_JOURNAL_PATH", path, 1)
        let (status, output) = try await Isolated.run("journalKilledChild")
        #expect(status == SIGKILL, "\(output.suffix(500))")
        let journal = try JobJournal(path: path, job: "killed")
        #expect(journal.count == 1_000)
        #expect(journal.entry("dir/file 999 ü%+#") == entry(999))
    }
}
