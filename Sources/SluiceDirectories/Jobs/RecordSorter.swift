#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluicePrimitives
import SluiceS3

/// Records (a key and a payload, bytes) sorted by key in a `KeyOrder`, in bounded memory: an
/// external merge sort. Records are held in memory up to `runBytes`, each such run sorted and
/// appended to an unnamed temporary file, and the runs read back merged, `fanIn` at a time
/// (runs of runs when there are more).
///
/// Memory is `runBytes` and 16 bytes a record of the run being filled, then `fanIn` read
/// buffers of `readBuffer` bytes while merging (4 MiB + 4 MiB by default), whatever the number
/// of records: 10 million paths of 60 bytes are 19 runs on disk.
///
/// - Important: Not thread-safe: one owner adds, then `finish`es once.
package struct RecordSorter {
    package let order: KeyOrder
    package let runBytes: Int
    package let fanIn: Int
    /// Makes each temporary file (the first, and one for each merge pass).
    package let makeFile: SpoolFile.Maker
    private var file: SpoolFile
    private var appender: SpoolAppender
    private var runs: [Range<Int64>] = []
    /// The run being filled: records as written to disk, and where each starts.
    private var buffer: [UInt8] = []
    private var starts: [Int] = []

    /// Bytes of a record before its key: the key's and the payload's lengths (UInt32, little-endian).
    package static let headerBytes = 8
    /// Each merged run's read buffer.
    package static let readBuffer = 64 << 10

    /// An empty sorter in `order`.
    ///
    /// - Parameter makeFile: Makes the temporary files (`SpoolFile.init` in `$TMPDIR`; tests
    ///   hand one whose writes fail).
    /// - Throws: `SpoolError` when no temporary file can be made.
    package init(
        order: KeyOrder, runBytes: Int = 4 << 20, fanIn: Int = 64, makeFile: @escaping SpoolFile.Maker = SpoolFile.temporary
    ) throws(SpoolError) {
        precondition(runBytes > 0 && fanIn >= 2, "RecordSorter needs a run size and a fan-in of at least 2")
        self.order = order
        self.runBytes = runBytes
        self.fanIn = fanIn
        self.makeFile = makeFile
        file = try makeFile()
        appender = SpoolAppender(file)
    }

    /// Adds a record.
    package mutating func add(key: some Collection<UInt8>, payload: some Collection<UInt8>) throws(SpoolError) {
        starts.append(buffer.count)
        Self.appendHeader(to: &buffer, key: key.count, payload: payload.count)
        buffer.append(contentsOf: key)
        buffer.append(contentsOf: payload)
        if buffer.count >= runBytes { try writeRun() }
    }

    package static func appendHeader(to buffer: inout [UInt8], key: Int, payload: Int) {
        for value in [UInt32(key), UInt32(payload)] {
            withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
        }
    }

    /// Sorts the records held and appends them to the file as one run.
    private mutating func writeRun() throws(SpoolError) {
        guard !starts.isEmpty else { return }
        let order = self.order
        var held: [UInt8] = []
        swap(&held, &buffer)
        func word(_ at: Int) -> Int {
            Int(UInt32(held[at]) | UInt32(held[at + 1]) << 8 | UInt32(held[at + 2]) << 16 | UInt32(held[at + 3]) << 24)
        }
        held.withUnsafeBytes { raw in
            func key(at start: Int) -> UnsafeRawBufferPointer {
                let length = Int(raw.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian)
                return UnsafeRawBufferPointer(rebasing: raw[(start + Self.headerBytes)..<(start + Self.headerBytes + length)])
            }
            starts.sort { order.precedes(key(at: $0), key(at: $1)) }
        }
        let begin = appender.offset
        for start in starts {
            let end = start + Self.headerBytes + word(start) + word(start + 4)
            try held.withUnsafeBytes { raw in
                Result { () throws(SpoolError) in try appender.append(UnsafeRawBufferPointer(rebasing: raw[start..<end])) }
            }.get()
        }
        try appender.flush()
        runs.append(begin..<appender.offset)
        held.removeAll(keepingCapacity: true)
        buffer = held
        starts.removeAll(keepingCapacity: true)
    }

    /// The records, merged in order (runs of runs first while there are more than `fanIn`).
    ///
    /// - Throws: `SpoolError` when the file cannot be written or read.
    package consuming func finish() throws(SpoolError) -> SortedRecords {
        try writeRun()
        while runs.count > fanIn {
            let next = try makeFile()
            var out = SpoolAppender(next)
            var merged: [Range<Int64>] = []
            for group in stride(from: 0, to: runs.count, by: fanIn) {
                let begin = out.offset
                var merge = RecordMerge(file: file, runs: Array(runs[group..<min(group + fanIn, runs.count)]), order: order)
                var header: [UInt8] = []
                while let (key, payload) = try merge.next() {
                    header.removeAll(keepingCapacity: true)
                    Self.appendHeader(to: &header, key: key.count, payload: payload.count)
                    for part in [header, key, payload] {
                        try part.withUnsafeBytes { raw in Result { () throws(SpoolError) in try out.append(raw) } }.get()
                    }
                }
                try out.flush()
                merged.append(begin..<out.offset)
            }
            file = next
            runs = merged
        }
        return SortedRecords(file: file, runs: runs, order: order)
    }
}

/// What a `RecordSorter` made: its file and its sorted runs, to be read merged (any number of
/// times, by any number of readers: each reads with `pread` into buffers of its own).
package final class SortedRecords: Sendable {
    package let file: SpoolFile
    package let runs: [Range<Int64>]
    package let order: KeyOrder

    package init(file: SpoolFile, runs: [Range<Int64>], order: KeyOrder) {
        self.file = file
        self.runs = runs
        self.order = order
    }

    /// The records from the first in `order`; equal keys come one after the other.
    package func merged() -> RecordMerge {
        RecordMerge(file: file, runs: runs, order: order)
    }
}

/// Sorted runs read back as one sequence in order (a binary heap of the runs' next records).
package struct RecordMerge: Sendable {
    private var readers: [RunReader]
    /// The runs' next records, as (key, payload, reader), ordered as a min-heap by key.
    private var heap: [(key: [UInt8], payload: [UInt8], reader: Int)] = []
    private var started = false
    private let order: KeyOrder

    package init(file: SpoolFile, runs: [Range<Int64>], order: KeyOrder) {
        readers = runs.map { RunReader(file: file, range: $0) }
        self.order = order
    }

    /// The next record; nil after the last.
    package mutating func next() throws(SpoolError) -> (key: [UInt8], payload: [UInt8])? {
        if !started {
            started = true
            for index in readers.indices {
                if let record = try readers[index].next() { push((record.key, record.payload, index)) }
            }
        }
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        if let record = try readers[top.reader].next() {
            heap[0] = (record.key, record.payload, top.reader)
        } else {
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        }
        siftDown(0)
        return (top.key, top.payload)
    }

    private mutating func push(_ entry: (key: [UInt8], payload: [UInt8], reader: Int)) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard order.precedes(heap[child].key, heap[parent].key) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var least = left
            if left + 1 < heap.count, order.precedes(heap[left + 1].key, heap[left].key) { least = left + 1 }
            guard order.precedes(heap[least].key, heap[parent].key) else { return }
            heap.swapAt(least, parent)
            parent = least
        }
    }
}

/// One run of a spool file read a buffer at a time.
package struct RunReader: Sendable {
    package let file: SpoolFile
    private var position: Int64
    private let end: Int64
    /// Bytes read from the run; `unread` of them not yet taken.
    private var buffer: [UInt8]
    private var unread = 0..<0

    package init(file: SpoolFile, range: Range<Int64>) {
        self.file = file
        position = range.lowerBound
        end = range.upperBound
        buffer = [UInt8](repeating: 0, count: Int(min(Int64(RecordSorter.readBuffer), range.upperBound - range.lowerBound)))
    }

    /// Makes at least `count` unread bytes available; false at the run's end.
    private mutating func fill(_ count: Int) throws(SpoolError) -> Bool {
        if unread.count >= count { return true }
        // What is left goes to the front, and the buffer grows for a record larger than it.
        let left = unread.count
        if unread.lowerBound > 0 {
            let from = unread.lowerBound
            buffer.withUnsafeMutableBytes { raw in
                if left > 0 { memmove(raw.baseAddress!, raw.baseAddress! + from, left) }
            }
        }
        unread = 0..<left
        if buffer.count < count { buffer += [UInt8](repeating: 0, count: count - buffer.count) }
        while unread.count < count, position < end {
            let want = Int(min(Int64(buffer.count - unread.upperBound), end - position))
            let (file, at, from) = (self.file, position, unread.upperBound)
            let got = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SpoolError) in
                    try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[from..<(from + want)]), at: at)
                }
            }.get()
            guard got > 0 else { throw SpoolError(operation: "read (the file ended early)", errno: EIO) }
            position += Int64(got)
            unread = 0..<(unread.upperBound + got)
        }
        return unread.count >= count
    }

    /// The run's next record; nil at its end.
    package mutating func next() throws(SpoolError) -> (key: [UInt8], payload: [UInt8])? {
        guard try fill(RecordSorter.headerBytes) else {
            guard unread.isEmpty else { throw SpoolError(operation: "read (a record cut short)", errno: EIO) }
            return nil
        }
        let (keyLength, payloadLength) = buffer.withUnsafeBytes { raw in
            (
                Int(raw.loadUnaligned(fromByteOffset: unread.lowerBound, as: UInt32.self).littleEndian),
                Int(raw.loadUnaligned(fromByteOffset: unread.lowerBound + 4, as: UInt32.self).littleEndian)
            )
        }
        guard try fill(RecordSorter.headerBytes + keyLength + payloadLength) else {
            throw SpoolError(operation: "read (a record cut short)", errno: EIO)
        }
        let keyStart = unread.lowerBound + RecordSorter.headerBytes
        let key = Array(buffer[keyStart..<(keyStart + keyLength)])
        let payload = Array(buffer[(keyStart + keyLength)..<(keyStart + keyLength + payloadLength)])
        unread = (keyStart + keyLength + payloadLength)..<unread.upperBound
        return (key, payload)
    }
}

/// An unnamed temporary file (made in `$TMPDIR`, else `/tmp`, and unlinked at once): written
/// at its end, read anywhere with `pread`. Closed when the last reference goes; nothing is left
/// on disk whatever way the process ends.
package final class SpoolFile: Sendable {
    package let descriptor: Int32

    /// - Throws: `SpoolError` when no temporary file can be made.
    package init() throws(SpoolError) {
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/sluice-spool-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw SpoolError(operation: "mkstemp in \(directory)", errno: errno) }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        self.descriptor = descriptor
    }

    /// Takes `descriptor`, open for reading and writing, as the file (closed with it): for a
    /// file whose writes fail (`/dev/full`), as tests hand a sorter.
    package init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// What makes a sorter's or a walk's temporary files.
    package typealias Maker = @Sendable () throws(SpoolError) -> SpoolFile

    /// A new unnamed temporary file in `$TMPDIR`, else `/tmp`.
    package static let temporary: Maker = { () throws(SpoolError) -> SpoolFile in try SpoolFile() }

    deinit { close(descriptor) }

    /// Appends all of `bytes` at the file's end (its offset: only a `SpoolAppender` writes).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(SpoolError) {
        do throws(Errno) { try Syscall.writeAll(descriptor, bytes) } catch { throw SpoolError(operation: "write", errno: error.code) }
    }

    /// Reads up to `buffer.count` bytes at `offset`.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SpoolError) -> Int {
        do throws(Errno) { return try Syscall.pread(descriptor, buffer, offset) } catch {
            throw SpoolError(operation: "read", errno: error.code)
        }
    }
}

/// Appends to a `SpoolFile` through a buffer of 64 KiB, counting the bytes written.
package struct SpoolAppender: Sendable {
    package let file: SpoolFile
    private var pending: [UInt8] = []
    /// Bytes appended so far (the file's length once flushed).
    package private(set) var offset: Int64 = 0

    package init(_ file: SpoolFile) {
        self.file = file
        pending.reserveCapacity(64 << 10)
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) throws(SpoolError) {
        pending.append(contentsOf: bytes)
        offset += Int64(bytes.count)
        if pending.count >= 64 << 10 { try flush() }
    }

    package mutating func flush() throws(SpoolError) {
        guard !pending.isEmpty else { return }
        let file = self.file
        try pending.withUnsafeBytes { raw in Result { () throws(SpoolError) in try file.write(raw) } }.get()
        pending.removeAll(keepingCapacity: true)
    }
}

/// A spool's temporary file could not be made, written or read.
public struct SpoolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call that failed.
    public var operation: String
    /// Its `errno`.
    public var errno: Int32

    public var description: String { "\(operation) of a temporary file failed: \(String(cString: strerror(errno)))" }
}
