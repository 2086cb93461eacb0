import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable record of a job of many uploads: a header naming the job, then one line per
/// item finished, appended as each finishes.
///
/// A line is one `write(2)` to a file opened with `O_APPEND`, so after `kill -9` every item
/// reported finished is in the file. The file is `fdatasync`ed at most every `syncInterval`
/// and when closed, so after a power cut the items of the last interval may be sent again,
/// never lost. A line cut short by a crash is dropped when the journal is opened again.
///
/// One run at a time: the journal holds its `RecordLock` from open to close, so a second run of
/// the same job (cron overlapping a slow run, the command started twice) is refused at once,
/// naming the holder's pid, before it reads or forgets anything.
///
/// Reading is bounded: a line longer than `maximumLineLength` or a header that names another
/// job is refused (`JobJournalError`), never read into memory whole.
package final class JobJournal: Sendable {
    /// What a finished item was when it was sent: a rerun sends it again if the file differs.
    package struct Entry: Codable, Sendable, Equatable {
        /// The item's name in the job (its path below the job's root).
        package var name: String
        package var size: Int64
        package var device: UInt64
        package var inode: UInt64
        package var modified: Int64
        /// The inode change time; nil in an entry written before it was recorded (which then
        /// matches no file: the file is sent again).
        package var changed: Int64?
        /// What the destination answered (an ETag), for the summary.
        package var result: String

        package init(name: String, size: Int64, device: UInt64, inode: UInt64, modified: Int64, changed: Int64?, result: String) {
            self.name = name
            self.size = size
            self.device = device
            self.inode = inode
            self.modified = modified
            self.changed = changed
            self.result = result
        }

        /// What `file` is now, sent with the answer `result`.
        package init(_ file: WalkedFile, result: String) {
            self.init(name: file.relativePath, size: file.size, device: file.device, inode: file.inode, modified: file.modified,
                      changed: file.changed, result: result)
        }

        /// The entry as one journal line: the JSON `JSONEncoder` writes with sorted keys and
        /// unescaped slashes, and a newline, made without it (it was half of an append).
        var line: [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(name.utf8.count + result.utf8.count + 112)
            func key(_ text: String) { out += Array("\"\(text)\":".utf8) }
            func number(_ text: String) { out += Array(text.utf8) }
            func string(_ text: String) {
                out.append(0x22)
                for byte in text.utf8 {
                    switch byte {
                    case 0x22: out += [0x5C, 0x22]
                    case 0x5C: out += [0x5C, 0x5C]
                    case 0x08: out += [0x5C, UInt8(ascii: "b")]
                    case 0x0C: out += [0x5C, UInt8(ascii: "f")]
                    case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                    case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                    case 0x09: out += [0x5C, UInt8(ascii: "t")]
                    case ..<0x20:
                        let hex = Array("0123456789abcdef".utf8)
                        out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                    default: out.append(byte)
                    }
                }
                out.append(0x22)
            }
            out.append(UInt8(ascii: "{"))
            if let changed { key("changed"); number(String(changed)); out.append(UInt8(ascii: ",")) }
            key("device"); number(String(device)); out.append(UInt8(ascii: ","))
            key("inode"); number(String(inode)); out.append(UInt8(ascii: ","))
            key("modified"); number(String(modified)); out.append(UInt8(ascii: ","))
            key("name"); string(name); out.append(UInt8(ascii: ","))
            key("result"); string(result); out.append(UInt8(ascii: ","))
            key("size"); number(String(size))
            out += [UInt8(ascii: "}"), 0x0A]
            return out
        }

        /// Whether `file` is still what this entry recorded: the same size, inode, modification
        /// and change times (as the single-object record, `S3SourceFingerprint`).
        package func matches(_ file: WalkedFile) -> Bool {
            size == file.size && device == file.device && inode == file.inode && modified == file.modified
                && changed == file.changed
        }
    }

    struct Header: Codable {
        var version: Int
        var job: String
    }

    static let version = 1
    /// Keys are at most 1,024 bytes; a line is a key and a few numbers.
    package static let maximumLineLength = 64 << 10
    package static let syncInterval: Duration = .milliseconds(250)

    package let path: String
    package let job: String

    struct State {
        var descriptor: Int32
        /// By the exact bytes of the name: two names that differ only in Unicode normalisation
        /// (café as NFC and as NFD) are two files and two keys, though Swift's `==` calls them equal.
        var finished: [[UInt8]: Entry]
        var lastSync: ContinuousClock.Instant
        var unsynced = false
    }

    private let state: Lock<State>
    private let lock: RecordLock

    /// Opens the journal at `path` for the job named `job` (a text that says which sources go
    /// where with which options), creating it durably if there is none.
    ///
    /// - Parameter forgetting: Start from an empty journal (a restart): the one there is
    ///   removed once this run holds the lock.
    /// - Throws: `JobJournalError` when another run holds the journal (`.locked`), the file
    ///   names another job, holds a line that is not an entry (other than a last one cut
    ///   short), or cannot be read or written.
    package init(path: String, job: String, forgetting: Bool = false) throws(JobJournalError) {
        self.path = path
        self.job = job
        let directory = (path as NSString).deletingLastPathComponent
        try Self.makeDirectories(directory)
        do throws(RecordLockError) { lock = try RecordLock.acquire(path) } catch {
            throw JobJournalError(path: path, problem: .locked(error.problem))
        }
        if forgetting { unlink(path) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw JobJournalError(path: path, problem: .system(call: "open", errno: errno)) }
        do throws(JobJournalError) {
            let (finished, validLength, hasHeader) = try Self.read(descriptor, path: path, job: job)
            var info = stat()
            fstat(descriptor, &info)
            if Int64(info.st_size) != validLength {
                guard ftruncate(descriptor, off_t(validLength)) == 0 else { throw JobJournalError(path: path, problem: .system(call: "ftruncate", errno: errno)) }
            }
            if !hasHeader {
                let header = try Self.line(Header(version: Self.version, job: job), path: path)
                try Self.write(header, to: descriptor, path: path)
                guard fsync(descriptor) == 0 else { throw JobJournalError(path: path, problem: .system(call: "fsync", errno: errno)) }
                let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if directoryDescriptor >= 0 {
                    fsync(directoryDescriptor)
                    closeDescriptor(directoryDescriptor)
                }
            }
            state = Lock(State(descriptor: descriptor, finished: finished, lastSync: .now))
        } catch {
            closeDescriptor(descriptor)
            throw error
        }
    }

    deinit {
        state.withLock { state in
            if state.descriptor >= 0 { closeDescriptor(state.descriptor) }
        }
    }

    /// The entry for `name`, if a run before this one finished it.
    package func entry(_ name: String) -> Entry? {
        state.withLock { $0.finished[Array(name.utf8)] }
    }

    /// The entry for `name`, if a run before this one finished it, forgotten once asked: a
    /// job's walk visits each file once, so what it has looked up need not stay in memory.
    package func take(_ name: String) -> Entry? {
        state.withLock { $0.finished.removeValue(forKey: Array(name.utf8)) }
    }

    /// How many items runs before this one finished (and were not taken yet).
    package var count: Int { state.withLock { $0.finished.count } }

    /// Records `entry` as finished: appended at once, synced within `syncInterval`. It is in
    /// the file only (this run's entries are not kept in memory; the next run reads them).
    ///
    /// - Throws: `JobJournalError` when the line cannot be written (a full disk).
    package func append(_ entry: Entry) throws(JobJournalError) {
        let line = entry.line
        let failure = state.withLock { state -> JobJournalError? in
            guard state.descriptor >= 0 else { return JobJournalError(path: path, problem: .closed) }
            do throws(JobJournalError) {
                try Self.write(line, to: state.descriptor, path: path)
            } catch {
                return error
            }
            state.unsynced = true
            if ContinuousClock.now - state.lastSync >= Self.syncInterval {
                guard fdatasync(state.descriptor) == 0 else { return JobJournalError(path: path, problem: .system(call: "fdatasync", errno: errno)) }
                state.lastSync = .now
                state.unsynced = false
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Syncs what was appended, closes the file and releases the lock. Called once; later
    /// appends fail.
    ///
    /// - Throws: `JobJournalError` when the sync fails.
    package func close() throws(JobJournalError) {
        defer { lock.release() }
        let failure = state.withLock { state -> JobJournalError? in
            guard state.descriptor >= 0 else { return nil }
            defer {
                closeDescriptor(state.descriptor)
                state.descriptor = -1
            }
            guard !state.unsynced || fdatasync(state.descriptor) == 0 else {
                return JobJournalError(path: path, problem: .system(call: "fdatasync", errno: errno))
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Closes and deletes the journal: the job is over (or forgotten).
    package func remove() {
        unlink(path)
        try? close()
    }

    /// `mkdir -p`, with the failing call's `errno` in the error.
    static func makeDirectories(_ directory: String) throws(JobJournalError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw JobJournalError(path: prefix, problem: .system(call: "mkdir", errno: errno))
            }
        }
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw JobJournalError(path: directory, problem: .system(call: "mkdir", errno: ENOTDIR))
        }
    }

    static func line<T: Encodable>(_ value: T, path: String) throws(JobJournalError) -> [UInt8] {
        if let entry = value as? Entry { return entry.line }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { throw JobJournalError(path: path, problem: .corrupt(line: 0, "cannot encode")) }
        return Array(data) + [0x0A]
    }

    static func write(_ line: [UInt8], to descriptor: Int32, path: String) throws(JobJournalError) {
        // O_APPEND: one write puts the whole line at the end; a short write (a full disk) is
        // an error, and the partial line is dropped by the next open.
        let written = line.withUnsafeBytes { raw in
            (try? Syscall.write(descriptor, raw)) ?? -1
        }
        guard written == line.count else {
            throw JobJournalError(path: path, problem: .system(call: "write", errno: written < 0 ? errno : ENOSPC))
        }
    }

    /// The entries in the file, the length of its whole lines, and whether it has a header.
    static func read(_ descriptor: Int32, path: String, job: String) throws(JobJournalError) -> ([[UInt8]: Entry], Int64, Bool) {
        var finished: [[UInt8]: Entry] = [:]
        var pending: [UInt8] = []
        var consumed: Int64 = 0
        var lineNumber = 0
        var hasHeader = false
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var offset: Int64 = 0
        let decoder = JSONDecoder()
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                (try? Syscall.pread(descriptor, raw, offset)) ?? -1
            }
            guard count >= 0 else { throw JobJournalError(path: path, problem: .system(call: "read", errno: errno)) }
            if count == 0 { break }
            offset += Int64(count)
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                pending.append(contentsOf: buffer[start..<index])
                start = index + 1
                lineNumber += 1
                if lineNumber == 1 {
                    guard let header = try? decoder.decode(Header.self, from: Data(pending)) else {
                        throw JobJournalError(path: path, problem: .corrupt(line: 1, "not a job record"))
                    }
                    guard header.version == version else { throw JobJournalError(path: path, problem: .corrupt(line: 1, "version \(header.version), not \(version)")) }
                    guard header.job == job else { throw JobJournalError(path: path, problem: .anotherJob(header.job)) }
                    hasHeader = true
                } else {
                    guard let entry = try? decoder.decode(Entry.self, from: Data(pending)) else {
                        throw JobJournalError(path: path, problem: .corrupt(line: lineNumber, "not an entry"))
                    }
                    finished[Array(entry.name.utf8)] = entry
                }
                consumed += Int64(pending.count + 1)
                pending.removeAll(keepingCapacity: true)
            }
            pending.append(contentsOf: buffer[start..<count])
            guard pending.count <= maximumLineLength else {
                throw JobJournalError(path: path, problem: .corrupt(line: lineNumber + 1, "a line longer than \(maximumLineLength) bytes"))
            }
        }
        // A last line with no newline was cut short by a crash: it is dropped.
        return (finished, consumed, hasHeader)
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    close(descriptor)
}

/// A job journal could not be used.
package struct JobJournalError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Problem: Sendable, Equatable {
        case system(call: String, errno: Int32)
        case corrupt(line: Int, String)
        case anotherJob(String)
        case closed
        /// Another run holds it (`RecordLock`).
        case locked(RecordLockError.Problem)
    }

    package var path: String
    package var problem: Problem

    package var description: String {
        switch problem {
        case .system(let call, let code): return "job record \(path): \(call): \(String(cString: strerror(code)))"
        case .corrupt(let line, let what): return "job record \(path) is damaged (line \(line): \(what))"
        case .anotherJob(let job): return "job record \(path) belongs to another job (\(job))"
        case .closed: return "job record \(path) is closed"
        case .locked(let problem): return "job record \(path): \(RecordLockError(record: path, problem: problem))"
        }
    }
}
