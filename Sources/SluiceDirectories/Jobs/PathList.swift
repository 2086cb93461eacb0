#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluicePrimitives
import SluiceS3

/// The files of a job named by a list (`--files-from FILE|-`) instead of a walk of its root:
/// read once, checked whole before anything is sent, and yielded in key order as a walk yields
/// them, in bounded memory however long the list.
///
/// - The list is paths relative to the root, one a line or (`Separator.nul`, from `find
///   -print0` or `git ls-files -z`) separated by NUL bytes, which lets a name hold a newline.
///   Each path is taken byte for byte (no trimming); empty entries are passed over; `.` and
///   empty components are dropped (`./a//b` is `a/b`); a path named twice is sent once.
/// - Every path must name a regular file below the root (symlinks followed unless
///   `followsSymlinks` is false), each `stat`ed as the list is read: a path that is absolute,
///   leaves the root (`..`), is not UTF-8, is longer than `maximumPathBytes`, or names no file
///   (missing, a directory, a FIFO, unreadable) fails the whole list (`PathListError`, with the
///   first such path and how many there were), so nothing is sent from a list with a mistake.
/// - A list need not be sorted: it is sorted on disk (`RecordSorter`, an external merge sort in
///   an unnamed temporary file) into the order of the keys, so the merge-join of `s3 sync`
///   works on it; memory is about 8 MiB whatever its length (10 million paths spool about
///   one GiB of temporary disk).
/// - Sizes and times are those seen when the list was read, as a walk's are those seen when a
///   directory was listed.
public final class PathList: Sendable {
    /// How the list's paths are separated.
    public enum Separator: Sendable, Equatable {
        /// One path a line (`\n`); a NUL byte in the list is an error (it asks for `.nul`).
        case newline
        /// Paths end in a NUL byte (`find -print0`): a name may hold a newline.
        case nul
    }

    /// The root's absolute path, as a `DirectoryWalk` makes it.
    public let root: String
    /// The files, in S3 key order (the path as key, the file's `stat` as payload).
    private let sorted: SortedRecords

    /// The longest path a list may hold, in bytes (Linux's `PATH_MAX`).
    public static let maximumPathBytes = 4096

    /// The most bytes a list may hold: 4 GiB, about 40 million paths (a list spools about
    /// 100 bytes a path). A list read from anything (a file, a pipe, a FIFO, a character
    /// device such as `/dev/zero`, a `/proc` file) ends at this bound, as at every other.
    public static let maximumListBytes: Int64 = 4 << 30

    /// Reads the list from `descriptor` to its end and checks every path.
    ///
    /// - Parameters:
    ///   - descriptor: Where the list is read from (a file, or stdin); not closed.
    ///   - root: The directory the paths are relative to.
    ///   - separator: How the paths are separated.
    ///   - followsSymlinks: Follow symlinks to files (the default); false refuses them.
    ///   - limit: The most bytes the list may hold (`maximumListBytes`).
    /// - Throws: `PathListError` for a list with a path that names no file below the root, or
    ///   that cannot be read or spooled. A list that is not one (an entry longer than a path,
    ///   a NUL in a list of lines, a name that is not UTF-8, no path in `maximumPathBytes`
    ///   bytes, more than `limit` bytes) is refused at its first such entry: nothing after it
    ///   is read, whatever the list is read from (`/dev/zero` never ends).
    public init(
        reading descriptor: Int32, root: String, separator: Separator, followsSymlinks: Bool = true,
        limit: Int64 = PathList.maximumListBytes
    ) throws(PathListError) {
        let absolute = DirectoryWalk.absolutePath(root)
        self.root = absolute
        var sorter = try RecordSorter.forList()
        var reader = EntryReader(descriptor: descriptor, separator: separator, limit: limit)
        var refusals = ListRefusals()
        var empties = 0
        while let bytes = try reader.next(separator, refusals: &refusals) {
            let checked = Self.check(bytes, separator: separator)
            if case .empty = checked { empties += 1 } else { empties = 0 }
            switch checked {
            case .refused(let problem):
                switch problem {
                case .holdsNUL, .notUTF8: throw refusals.end(problem)
                default: refusals.refuse(problem)
                }
            case .empty:
                // Separators with no path between them (`/dev/zero` with `--null`).
                if empties > Self.maximumPathBytes { throw refusals.end(.noPath(bytes: empties)) }
                continue
            case .relative(let relative):
                let listed = DirectoryWalk.classify(relative, in: absolute, followsSymlinks: followsSymlinks)
                let path = DirectoryWalk.join(absolute, String(decoding: relative, as: UTF8.self))
                switch listed.kind {
                case .file(let size, let modified, let changed, let device, let inode):
                    let payload = FilePayload(size: size, modified: modified, changed: changed, device: device, inode: inode)
                    do throws(SpoolError) { try sorter.add(key: relative, payload: payload.bytes) } catch {
                        throw PathListError(problem: .spool(error), count: 1)
                    }
                case .directory: refusals.refuse(.isADirectory(path))
                case .issue(let kind): refusals.refuse(.notAFile(WalkIssue(path: path, kind: kind)))
                }
            }
        }
        try refusals.check()
        do throws(SpoolError) { sorted = try sorter.finish() } catch { throw PathListError(problem: .spool(error), count: 1) }
    }

    /// An entry of a list, checked.
    package enum Checked: Equatable {
        /// An empty entry: passed over.
        case empty
        /// The path made relative and plain (`.` and empty components dropped).
        case relative([UInt8])
        /// Why the entry cannot be taken.
        case refused(PathListError.Problem)
    }

    /// An entry of a list, checked.
    package static func check(_ bytes: [UInt8], separator: Separator) -> Checked {
        let shown = String(decoding: bytes, as: UTF8.self)
        if separator == .newline, bytes.contains(0) { return .refused(.holdsNUL) }
        guard String(validating: bytes, as: UTF8.self) != nil else { return .refused(.notUTF8(shown)) }
        if bytes.first == 0x2F { return .refused(.absolute(shown)) }
        var components: [ArraySlice<UInt8>] = []
        for component in bytes.split(separator: 0x2F, omittingEmptySubsequences: true) {
            if component.elementsEqual([0x2E]) { continue }
            if component.elementsEqual([0x2E, 0x2E]) { return .refused(.leavesRoot(shown)) }
            components.append(component)
        }
        guard !components.isEmpty else { return bytes.isEmpty ? .empty : .refused(.notAFilePath(shown)) }
        return .relative(Array(components.joined(separator: [0x2F])))
    }

    /// The files, in `order`, each once, as a walk yields them.
    ///
    /// - Throws: `PathListError` when the list cannot be sorted again (`.hierarchical`: a
    ///   temporary file of its own).
    package func files(in order: KeyOrder) throws(PathListError) -> Files {
        guard order != sorted.order else { return Files(root: root, merge: sorted.merged()) }
        do throws(SpoolError) {
            var again = try RecordSorter(order: order)
            var merge = sorted.merged()
            while let (key, payload) = try merge.next() { try again.add(key: key, payload: payload) }
            return Files(root: root, merge: try again.finish().merged())
        } catch {
            throw PathListError(problem: .spool(error), count: 1)
        }
    }

    /// A list's files, in key order, each once: what a job takes instead of a walk. A class, so
    /// that a copy of a `JobFiles` handed to the blocking pool and back does not copy its
    /// read buffers.
    // @unchecked: one task at a time reads it (the job awaits each call it hands to the pool).
    package final class Files: @unchecked Sendable {
        package let root: String
        private var merge: RecordMerge
        private var last: [UInt8]?
        private var ended = false

        package init(root: String, merge: RecordMerge) {
            self.root = root
            self.merge = merge
        }

        /// The next file; after a failure to read the spool, one issue saying so, then nil.
        package func next() -> WalkEntry? {
            guard !ended else { return nil }
            do throws(SpoolError) {
                while let (key, payload) = try merge.next() {
                    if key == last { continue }
                    last = key
                    let relative = String(decoding: key, as: UTF8.self)
                    let file = FilePayload(payload)
                    return .file(
                        WalkedFile(
                            path: DirectoryWalk.join(root, relative), relativePath: relative, size: file.size,
                            modified: file.modified, changed: file.changed, device: file.device, inode: file.inode))
                }
                ended = true
                return nil
            } catch {
                ended = true
                return .issue(WalkIssue(path: root, kind: .system(operation: "the list of files: \(error.operation)", errno: error.errno)))
            }
        }
    }
}

/// What a `PathList` keeps of a file's `stat`: 40 bytes, little-endian.
package struct FilePayload {
    package var size: Int64
    package var modified: Int64
    package var changed: Int64
    package var device: UInt64
    package var inode: UInt64

    package init(size: Int64, modified: Int64, changed: Int64, device: UInt64, inode: UInt64) {
        (self.size, self.modified, self.changed, self.device, self.inode) = (size, modified, changed, device, inode)
    }

    package init(_ bytes: [UInt8]) {
        func word(_ index: Int) -> UInt64 {
            bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        }
        self.init(
            size: Int64(bitPattern: word(0)), modified: Int64(bitPattern: word(1)), changed: Int64(bitPattern: word(2)),
            device: word(3), inode: word(4))
    }

    package var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(40)
        for word in [UInt64(bitPattern: size), UInt64(bitPattern: modified), UInt64(bitPattern: changed), device, inode] {
            withUnsafeBytes(of: word.littleEndian) { out.append(contentsOf: $0) }
        }
        return out
    }
}

/// The entries of a list, read from a descriptor 64 KiB at a time and split at a separator;
/// an entry longer than `PathList.maximumPathBytes` is not held (its first bytes are).
package struct EntryReader {
    package enum Entry {
        case path([UInt8])
        /// An entry too long to be a path, by its first bytes: told as soon as it is longer,
        /// without reading to its end.
        case tooLong(start: [UInt8])
        /// More than `limit` bytes were read.
        case overLimit
    }

    package let descriptor: Int32
    package let separator: UInt8
    /// The most bytes read before `.overLimit`.
    package let limit: Int64
    private var total: Int64 = 0
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    private var available = 0..<0
    private var current: [UInt8] = []
    private var overlong = false
    private var ended = false

    package init(descriptor: Int32, separator: PathList.Separator, limit: Int64 = PathList.maximumListBytes) {
        self.descriptor = descriptor
        self.separator = separator == .nul ? 0 : 0x0A
        self.limit = limit
    }

    /// The next entry read with `separator`; nil at the end of the list.
    ///
    /// - Throws: `PathListError` with the problems of `refusals` before it when the list is not
    ///   one (an entry too long, a NUL in a list of lines, too many bytes) or cannot be read:
    ///   nothing after it is read.
    package mutating func next(_ separator: PathList.Separator, refusals: inout ListRefusals) throws(PathListError) -> [UInt8]? {
        let entry: Entry
        do throws(Errno) {
            guard let next = try next() else { return nil }
            entry = next
        } catch {
            throw refusals.end(.unreadable(errno: error.code))
        }
        switch entry {
        case .tooLong(let start) where separator == .newline && start.contains(0): throw refusals.end(.holdsNUL)
        case .tooLong(let start): throw refusals.end(.tooLong(start: String(decoding: start, as: UTF8.self)))
        case .overLimit: throw refusals.end(.tooLarge(limit: limit))
        case .path(let bytes): return bytes
        }
    }

    /// The next entry (the last one need not end in the separator); nil at the end.
    package mutating func next() throws(Errno) -> Entry? {
        while true {
            if available.isEmpty {
                guard !ended else { return nil }
                let descriptor = self.descriptor
                let count = try chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(Errno) in try Syscall.read(descriptor, raw) }
                }.get()
                available = 0..<count
                total += Int64(count)
                guard total <= limit else { return .overLimit }
                if count == 0 {
                    ended = true
                    guard !current.isEmpty || overlong else { return nil }
                    return take()
                }
            }
            let end = chunk[available].firstIndex(of: separator)
            let piece = chunk[available.lowerBound..<(end ?? available.upperBound)]
            current.append(contentsOf: piece.prefix(PathList.maximumPathBytes + 1 - current.count))
            if current.count > PathList.maximumPathBytes {
                overlong = true
                return take()
            }
            guard let end else {
                available = 0..<0
                continue
            }
            available = (end + 1)..<available.upperBound
            return take()
        }
    }

    private mutating func take() -> Entry {
        defer {
            current.removeAll(keepingCapacity: true)
            overlong = false
        }
        return overlong ? .tooLong(start: Array(current.prefix(64))) : .path(current)
    }
}

extension RecordSorter {
    /// The sorter a list is read into, in S3's order.
    ///
    /// - Throws: `PathListError.spool` when no temporary file can be made.
    package static func forList() throws(PathListError) -> RecordSorter {
        do throws(SpoolError) { return try RecordSorter(order: .s3) } catch { throw PathListError(problem: .spool(error), count: 1) }
    }
}

/// The problems of a list found so far: the first, and how many entries had one.
package struct ListRefusals {
    private var first: PathListError.Problem?
    private var count = 0

    package init() {}

    /// An entry not taken: the list is refused once it has been read to its end.
    package mutating func refuse(_ problem: PathListError.Problem) {
        count += 1
        if first == nil { first = problem }
    }

    /// The list is not one: refused at once, with the problems before it.
    package mutating func end(_ problem: PathListError.Problem) -> PathListError {
        refuse(problem)
        return PathListError(problem: first ?? problem, count: count)
    }

    /// Refuses the list when an entry was not taken.
    package func check() throws(PathListError) {
        if let first { throw PathListError(problem: first, count: count) }
    }
}

/// Why a list of files (`--files-from`) was refused: its first problem and how many paths had
/// one. Nothing was sent.
public struct PathListError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with a path of the list, or with the list.
    public enum Problem: Sendable, Equatable {
        /// The path names no regular file below the root: missing, a directory, a FIFO, a
        /// symlink not followed, unreadable (the walk's words).
        case notAFile(WalkIssue)
        /// The path names a directory: a list names files.
        case isADirectory(String)
        /// The path starts with `/`: paths are relative to the root.
        case absolute(String)
        /// The path has a `..` component.
        case leavesRoot(String)
        /// The path is only `.` and `/`.
        case notAFilePath(String)
        /// The path is not UTF-8: it has no S3 key.
        case notUTF8(String)
        /// A NUL byte in a list of lines: a NUL-separated list (`find -print0`) needs `--null`.
        case holdsNUL
        /// An entry longer than `PathList.maximumPathBytes`, by its first bytes.
        case tooLong(start: String)
        /// The list holds more than `limit` bytes (`PathList.maximumListBytes`).
        case tooLarge(limit: Int64)
        /// `bytes` separators in a row with no path between them.
        case noPath(bytes: Int)
        /// A key of a list of keys (`KeyList`) that would be longer than S3's 1,024 bytes below
        /// the source's prefix.
        case keyTooLong(String)
        /// The list could not be read.
        case unreadable(errno: Int32)
        /// The temporary file the list is sorted in could not be made, written or read.
        case spool(SpoolError)
    }

    /// The first problem found.
    public var problem: Problem
    /// How many paths had a problem (1 for a list that could not be read or spooled).
    public var count: Int

    /// `text` as one line: quoted with its control characters escaped when it holds any (a
    /// list read from `/dev/urandom`), else as it is.
    package static func shown(_ text: String) -> String {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } ? text.debugDescription : text
    }

    public var description: String {
        let text: String
        switch problem {
        case .notAFile(let issue): text = "\(issue)"
        case .isADirectory(let path): text = "\(path): is a directory; a list names files (find -type f)"
        case .absolute(let path): text = "\(path): is absolute; the paths of a list are relative to the directory"
        case .leavesRoot(let path): text = "\(path): leaves the directory (..)"
        case .notAFilePath(let path): text = "'\(path)': names the directory itself, not a file"
        case .notUTF8(let path): text = "\(Self.shown(path)): the name is not UTF-8"
        case .holdsNUL: text = "the list holds a NUL byte, as a NUL-separated list (find -print0) does"
        case .tooLong(let start): text = "\(Self.shown(start))...: longer than \(PathList.maximumPathBytes) bytes"
        case .tooLarge(let limit): return "the list holds more than \(limit) bytes, more than any list of paths; nothing after it was read"
        case .noPath(let bytes): return "the list holds \(bytes) separators in a row with no path: not a list of paths; nothing after them was read"
        case .keyTooLong(let key): text = "\(Self.shown(key)): longer than S3's \(S3Location.maximumKeyLength) bytes below the prefix"
        case .unreadable(let code): return "cannot read the list: \(String(cString: strerror(code)))"
        case .spool(let error): return "the list of files: \(error)"
        }
        return count > 1 ? "\(text) (and \(count - 1) more \(count == 2 ? "path" : "paths") not taken)" : text
    }
}
