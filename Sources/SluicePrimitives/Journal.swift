import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a `Journal` records: one line per item, replacing an earlier one with the same key.
package protocol JournalEntry: Codable, Sendable, Equatable {
    /// What the record is called in messages ("job record").
    static var recordName: String { get }
    /// The item; a later entry with the same key replaces an earlier one. Compared by its exact
    /// bytes: two names that differ only in Unicode normalisation are two keys.
    var key: String { get }
    /// The entry as one line: its JSON and a newline.
    var line: [UInt8] { get }
}

extension JournalEntry {
    /// What `JSONEncoder` writes, keys sorted, and a newline.
    package var line: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ((try? encoder.encode(self)).map(Array.init) ?? []) + [0x0A]
    }
}

/// A durable record that grows by appending: a header naming what it is the record of (a job
/// of many uploads, a presigned-parts upload), then one line per item finished, appended as
/// each finishes: O(items) bytes written in all.
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
/// job is refused (`JournalError`), never read into memory whole.
package final class Journal<Item: JournalEntry>: Sendable {
    /// What one line records.
    package typealias Entry = Item

    package struct Header: Codable {
        package var version: Int
        package var job: String
    }

    package static var version: Int { 1 }
    /// Keys are at most 1,024 bytes; a line is a key and a few numbers.
    package static var maximumLineLength: Int { 64 << 10 }
    package static var syncInterval: Duration { .milliseconds(250) }

    package let path: String
    package let job: String

    package struct State {
        package var descriptor: Int32
        /// By the exact bytes of the name: two names that differ only in Unicode normalisation
        /// (café as NFC and as NFD) are two files and two keys, though Swift's `==` calls them equal.
        package var finished: [[UInt8]: Entry]
        package var lastSync: ContinuousClock.Instant
        package var unsynced = false
        /// A `syncIfDue` is in `fdatasync` (outside the lock): `close` waits for it.
        package var syncing = false
    }

    private let state: Lock<State>
    private let lock: RecordLock

    /// Opens the journal at `path` for the job named `job` (a text that says which sources go
    /// where with which options, or which upload of which source), creating it durably if
    /// there is none.
    ///
    /// - Parameter forgetting: Start from an empty journal (a restart): the one there is
    ///   removed once this run holds the lock.
    /// - Throws: `JournalError` when another run holds the journal (`.locked`), the file
    ///   names another job, holds a line that is not an entry (other than a last one cut
    ///   short), or cannot be read or written.
    package init(path: String, job: String, forgetting: Bool = false) throws(JournalError) {
        self.path = path
        self.job = job
        let directory = (path as NSString).deletingLastPathComponent
        try Self.makeDirectories(directory)
        do throws(RecordLockError) { lock = try RecordLock.acquire(path) } catch {
            throw JournalError(path: path, problem: .locked(error.problem), record: Entry.recordName)
        }
        if forgetting { unlink(path) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw JournalError(path: path, problem: .system(call: "open", errno: errno), record: Entry.recordName) }
        do throws(JournalError) {
            let (finished, validLength, hasHeader) = try Self.read(descriptor, path: path, job: job)
            var info = stat()
            fstat(descriptor, &info)
            if Int64(info.st_size) != validLength {
                guard ftruncate(descriptor, off_t(validLength)) == 0 else {
                    throw JournalError(path: path, problem: .system(call: "ftruncate", errno: errno), record: Entry.recordName)
                }
            }
            if !hasHeader {
                let header = try Self.line(Header(version: Self.version, job: job), path: path)
                try Self.write(header, to: descriptor, path: path)
                guard fsync(descriptor) == 0 else { throw JournalError(path: path, problem: .system(call: "fsync", errno: errno), record: Entry.recordName) }
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

    /// Every entry runs before this one finished (and not taken yet), forgotten once asked.
    package func takeAll() -> [Entry] {
        state.withLock { state in
            defer { state.finished = [:] }
            return Array(state.finished.values)
        }
    }

    /// Records `entry` as finished: appended at once, synced within `syncInterval`. It is in
    /// the file only (this run's entries are not kept in memory; the next run reads them).
    ///
    /// - Throws: `JournalError` when the line cannot be written (a full disk).
    package func append(_ entry: Entry) throws(JournalError) {
        let line = entry.line
        let failure = state.withLock { state -> JournalError? in
            guard state.descriptor >= 0 else { return JournalError(path: path, problem: .closed, record: Entry.recordName) }
            do throws(JournalError) {
                try Self.write(line, to: state.descriptor, path: path)
            } catch {
                return error
            }
            state.unsynced = true
            if ContinuousClock.now - state.lastSync >= Self.syncInterval {
                guard fdatasync(state.descriptor) == 0 else { return JournalError(path: path, problem: .system(call: "fdatasync", errno: errno), record: Entry.recordName) }
                state.lastSync = .now
                state.unsynced = false
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Records `entry` as `append` does, but leaves the sync to the caller: one `write(2)` to
    /// the page cache, which costs less than the two thread switches of a trip to the blocking
    /// pool (a job of small files made one trip a file for it). Returns whether a sync is due:
    /// the caller then runs `syncIfDue()` where waiting on the disk is allowed.
    ///
    /// - Throws: `JournalError` when the line cannot be written (a full disk).
    package func appendLeavingSync(_ entry: Entry) throws(JournalError) -> Bool {
        let line = entry.line
        let outcome = state.withLock { state -> Result<Bool, JournalError> in
            guard state.descriptor >= 0 else { return .failure(JournalError(path: path, problem: .closed, record: Entry.recordName)) }
            do throws(JournalError) {
                try Self.write(line, to: state.descriptor, path: path)
            } catch {
                return .failure(error)
            }
            state.unsynced = true
            return .success(!state.syncing && ContinuousClock.now - state.lastSync >= Self.syncInterval)
        }
        return try outcome.get()
    }

    /// `fdatasync`s what was appended when `syncInterval` has passed since the last sync and
    /// no other sync is under way. The lock is not held while the disk is waited for, so an
    /// `appendLeavingSync` meanwhile does not wait for it.
    ///
    /// - Throws: `JournalError` when the sync fails.
    package func syncIfDue() throws(JournalError) {
        let descriptor = state.withLock { state -> Int32? in
            guard state.descriptor >= 0, state.unsynced, !state.syncing, ContinuousClock.now - state.lastSync >= Self.syncInterval else { return nil }
            state.syncing = true
            state.unsynced = false
            return state.descriptor
        }
        guard let descriptor else { return }
        let code = fdatasync(descriptor) == 0 ? 0 : errno
        state.withLockBroadcasting { state in
            state.syncing = false
            if code == 0 { state.lastSync = .now } else { state.unsynced = true }
        }
        if code != 0 { throw JournalError(path: path, problem: .system(call: "fdatasync", errno: code), record: Entry.recordName) }
    }

    /// Syncs what was appended, closes the file and releases the lock. Called once; later
    /// appends fail. Waits for a `syncIfDue` under way.
    ///
    /// - Throws: `JournalError` when the sync fails.
    package func close() throws(JournalError) {
        defer { lock.release() }
        let outcome = state.wait { state -> Result<Void, JournalError>? in
            if state.syncing { return nil }
            guard state.descriptor >= 0 else { return .success(()) }
            defer {
                closeDescriptor(state.descriptor)
                state.descriptor = -1
            }
            guard !state.unsynced || fdatasync(state.descriptor) == 0 else {
                return .failure(JournalError(path: path, problem: .system(call: "fdatasync", errno: errno), record: Entry.recordName))
            }
            return .success(())
        }
        try outcome.get()
    }

    /// Closes and deletes the journal: the job is over (or forgotten).
    package func remove() {
        unlink(path)
        try? close()
    }

    /// `mkdir -p`, with the failing call's `errno` in the error.
    package static func makeDirectories(_ directory: String) throws(JournalError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw JournalError(path: prefix, problem: .system(call: "mkdir", errno: errno), record: Entry.recordName)
            }
        }
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw JournalError(path: directory, problem: .system(call: "mkdir", errno: ENOTDIR), record: Entry.recordName)
        }
    }

    package static func line<T: Encodable>(_ value: T, path: String) throws(JournalError) -> [UInt8] {
        if let entry = value as? Entry { return entry.line }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { throw JournalError(path: path, problem: .corrupt(line: 0, "cannot encode"), record: Entry.recordName) }
        return Array(data) + [0x0A]
    }

    package static func write(_ line: [UInt8], to descriptor: Int32, path: String) throws(JournalError) {
        // O_APPEND: one write puts the whole line at the end; a short write (a full disk) is
        // an error, and the partial line is dropped by the next open.
        let written = line.withUnsafeBytes { raw in
            (try? Syscall.write(descriptor, raw)) ?? -1
        }
        guard written == line.count else {
            throw JournalError(path: path, problem: .system(call: "write", errno: written < 0 ? errno : ENOSPC), record: Entry.recordName)
        }
    }

    /// The entries in the file, the length of its whole lines, and whether it has a header.
    package static func read(_ descriptor: Int32, path: String, job: String) throws(JournalError) -> ([[UInt8]: Entry], Int64, Bool) {
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
            guard count >= 0 else { throw JournalError(path: path, problem: .system(call: "read", errno: errno), record: Entry.recordName) }
            if count == 0 { break }
            offset += Int64(count)
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                pending.append(contentsOf: buffer[start..<index])
                start = index + 1
                lineNumber += 1
                if lineNumber == 1 {
                    guard let header = try? decoder.decode(Header.self, from: Data(pending)) else {
                        throw JournalError(path: path, problem: .corrupt(line: 1, "not a \(Entry.recordName)"), record: Entry.recordName)
                    }
                    guard header.version == version else {
                        throw JournalError(path: path, problem: .corrupt(line: 1, "version \(header.version), not \(version)"), record: Entry.recordName)
                    }
                    guard header.job == job else { throw JournalError(path: path, problem: .anotherJob(header.job), record: Entry.recordName) }
                    hasHeader = true
                } else {
                    guard let entry = try? decoder.decode(Entry.self, from: Data(pending)) else {
                        throw JournalError(path: path, problem: .corrupt(line: lineNumber, "not an entry"), record: Entry.recordName)
                    }
                    finished[Array(entry.key.utf8)] = entry
                }
                consumed += Int64(pending.count + 1)
                pending.removeAll(keepingCapacity: true)
            }
            pending.append(contentsOf: buffer[start..<count])
            guard pending.count <= maximumLineLength else {
                throw JournalError(path: path, problem: .corrupt(line: lineNumber + 1, "a line longer than \(maximumLineLength) bytes"), record: Entry.recordName)
            }
        }
        // A last line with no newline was cut short by a crash: it is dropped.
        return (finished, consumed, hasHeader)
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    close(descriptor)
}

/// A journal could not be used.
package struct JournalError: Error, Sendable, Equatable, CustomStringConvertible {
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
    /// What the record is called ("job record").
    package var record: String

    package init(path: String, problem: Problem, record: String) {
        self.path = path
        self.problem = problem
        self.record = record
    }

    package var description: String {
        switch problem {
        case .system(let call, let code): return "\(record) \(path): \(call): \(String(cString: strerror(code)))"
        case .corrupt(let line, let what): return "\(record) \(path) is damaged (line \(line): \(what))"
        case .anotherJob(let job): return "\(record) \(path) belongs to another job (\(job))"
        case .closed: return "\(record) \(path) is closed"
        case .locked(let problem): return "\(record) \(path): \(RecordLockError(record: path, problem: problem))"
        }
    }
}
