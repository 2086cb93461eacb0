#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SluiceByteSources
import SluiceS3
import SluicePrimitives

/// A regular file found by a `DirectoryWalk`.
public struct WalkedFile: Sendable, Equatable {
    /// The file's path: the walk's root, `/`, then `relativePath`.
    public var path: String
    /// The path below the root, `/`-separated (the AWS CLI's key suffix).
    public var relativePath: String
    /// The size when the directory was listed.
    public var size: Int64
    /// The modification time when the directory was listed, in nanoseconds since 1970.
    public var modified: Int64
    /// The inode change time when the directory was listed, in nanoseconds since 1970: a
    /// rewrite whose modification time was put back (`cp -p`, `touch -r`) still changes it.
    public var changed: Int64
    /// The file's device and inode (after following a symlink).
    public var device: UInt64
    /// The file's inode number (with `device`, it names the file).
    public var inode: UInt64
}

/// Why a `DirectoryWalk` passed over a path, or could not read it.
public struct WalkIssue: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of path was passed over, or why it could not be read.
    public enum Kind: Sendable, Equatable {
        /// A FIFO, socket or device (a `kind` such as "FIFO"): never read by a walk.
        case specialFile(kind: String)
        /// A symlink, passed over because the walk does not follow them.
        case symlinkNotFollowed
        /// A symlink to a directory that is already being walked above it.
        case symlinkLoop
        /// A symlink whose target does not exist.
        case brokenSymlink
        /// A name that is not UTF-8: it has no S3 key.
        case nameNotUTF8
        /// The path does not exist (the root, or an entry that went away while listed).
        case notFound
        /// The root is not a directory.
        case notADirectory
        /// A directory or file the process may not read.
        case permissionDenied
        /// Any other system error, by `errno`.
        case system(operation: String, errno: Int32)
        /// A directory that was moved, removed or replaced while it was walked (`mv d x; mv x
        /// d`): its path no longer names the directory the walk listed, so what was read under
        /// it may be under another name now.
        case changedDuringWalk
    }

    /// The path as the walk names it (the root joined with the names below it).
    public var path: String
    /// Why the path was passed over.
    public var kind: Kind

    /// Creates an issue for `path`.
    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
    }

    /// Whether the walk left the path out on purpose (special files, symlinks not followed,
    /// loops), rather than failing to read something it should have sent.
    public var isDeliberate: Bool {
        switch kind {
        case .specialFile, .symlinkNotFollowed, .symlinkLoop: return true
        default: return false
        }
    }

    public var description: String {
        switch kind {
        case .specialFile(let kind): return "\(path): is a \(kind), skipped"
        case .symlinkNotFollowed: return "\(path): is a symlink, skipped"
        case .symlinkLoop: return "\(path): is a symlink to a directory above it (a loop), skipped"
        case .brokenSymlink: return "\(path): is a symlink to nothing"
        case .nameNotUTF8: return "\(path): the name is not UTF-8"
        case .notFound: return "\(path): no such file or directory"
        case .notADirectory: return "\(path): is not a directory"
        case .permissionDenied: return "\(path): permission denied"
        case .system(let operation, let code): return "\(path): \(operation) failed: \(String(cString: strerror(code)))"
        case .changedDuringWalk: return "\(path): was moved, removed or replaced while it was walked"
        }
    }
}

/// What a `DirectoryWalk` yields: a file to send, or a path it passed over or could not read.
public enum WalkEntry: Sendable, Equatable {
    /// A regular file to send.
    case file(WalkedFile)
    /// A path passed over (a FIFO, a socket, a symlink loop) or one that could not be read.
    case issue(WalkIssue)
}

/// The regular files below a directory, one at a time, in the order of their S3 keys (the byte
/// order of their `/`-separated relative paths, as `aws s3 cp --recursive` and S3 listings
/// go), without listing the tree first.
///
/// Memory is one directory's names for each level being walked, never the whole tree, and a
/// directory larger than a bound (`Spill`, 32,768 entries) is sorted on disk and read back in
/// key order, so even one directory of millions of files costs a few MiB. Symlinks
/// are followed by default, as the AWS CLI does; a symlink to a directory that is already open
/// above it is reported as a loop instead of being walked again. FIFOs, sockets and devices are
/// reported, never opened (opening a FIFO can wait for ever).
///
/// - Important: The sizes and times are those seen when a directory was listed. A file that
///   changes afterwards is caught by whoever reads it.
public struct DirectoryWalk: Sequence, IteratorProtocol, Sendable {
    /// The root's absolute path, lexically normalised (`.`, `..` and repeated `/` removed), as
    /// `os.path.abspath` makes it.
    public let root: String
    /// Whether symlinks are followed.
    public let followsSymlinks: Bool
    /// The order files are yielded in (S3's unless a listing to join with has another).
    public let order: KeyOrder

    /// One listed name.
    ///
    /// Kept small (the name's bytes and a few numbers; paths are made when the entry is
    /// yielded): a directory of up to `Spill.entriesInMemory` names is listed whole in memory.
    package struct Listed: Sendable {
        package enum Kind: Sendable {
            case directory(device: UInt64, inode: UInt64)
            case file(size: Int64, modified: Int64, changed: Int64, device: UInt64, inode: UInt64)
            case issue(WalkIssue.Kind)
        }

        /// The name's bytes, then `/` for a directory: the order S3 lists keys in.
        package var sortKey: [UInt8]
        package var kind: Kind

        /// The name (a name that is not UTF-8 with U+FFFD in place of its bad bytes).
        package var name: String {
            if case .directory = kind { return String(decoding: sortKey.dropLast(), as: UTF8.self) }
            return String(decoding: sortKey, as: UTF8.self)
        }
    }

    /// One directory being walked: its entries in key order and where the walk is in them.
    package struct Frame: Sendable {
        package var path: String
        package var relative: String
        package var identity: FileIdentity
        package var entries: Entries
        package var next = 0

        /// The next entry in key order; nil after the last.
        mutating func take() -> Result<Listed?, SpoolError> {
            switch entries {
            case .held(let list):
                guard next < list.count else { return .success(nil) }
                next += 1
                return .success(list[next - 1])
            case .spilled(let spilled):
                return Result { () throws(SpoolError) in try spilled.next() }
            }
        }
    }

    package struct FileIdentity: Hashable, Sendable {
        package var device: UInt64
        package var inode: UInt64
    }

    private var stack: [Frame] = []
    private var pending: WalkEntry?
    /// Absolute paths of directories passed over without a word (a job's state directory
    /// inside its tree): never listed, none of their files yielded.
    public var skipped: Set<String> = []
    /// How one directory's entries are held: in memory up to a bound, sorted on disk beyond it.
    package let spill: Spill
    /// Where each directory left is recorded with its identity, to be checked again at the end
    /// of a run (`WalkedDirectories.recheck`); nil records nothing.
    package var walked: WalkedDirectories?

    /// Opens the walk at `root`.
    ///
    /// - Parameters:
    ///   - root: A directory (relative to the working directory, or absolute).
    ///   - followsSymlinks: Follow symlinks to files and directories (the default, as the
    ///     AWS CLI); false reports each symlink as passed over.
    ///   - order: The order of the keys the files are yielded in.
    /// - Throws: `WalkIssue` when the root does not exist, is not a directory or cannot be read.
    public init(root: String, followsSymlinks: Bool = true, order: KeyOrder = .s3) throws(WalkIssue) {
        try self.init(root: root, followsSymlinks: followsSymlinks, order: order, spill: Spill())
    }

    /// Opens the walk at `root`, holding each directory's entries as `spill` says.
    package init(root: String, followsSymlinks: Bool = true, order: KeyOrder = .s3, spill: Spill) throws(WalkIssue) {
        let absolute = Self.absolutePath(root)
        self.root = absolute
        self.followsSymlinks = followsSymlinks
        self.order = order
        self.spill = spill
        var info = stat()
        guard stat(absolute, &info) == 0 else { throw WalkIssue(path: root, kind: Self.kind(errno, "stat")) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw WalkIssue(path: root, kind: .notADirectory) }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        switch Self.list(absolute, followsSymlinks: followsSymlinks, order: order, spill: spill) {
        case .success(let entries):
            stack = [Frame(path: absolute, relative: "", identity: identity, entries: entries)]
        case .failure(let issue):
            throw WalkIssue(path: root, kind: issue.kind)
        }
    }

    /// Throws what `init(root:)` throws for a root that is not a directory or cannot be opened
    /// for listing, without listing it: the check before a job (a listing costs an `lstat` per
    /// entry, 5,000 for a flat directory of 5,000 files, which the job's walk then makes again).
    package static func checkRoot(_ root: String) throws(WalkIssue) {
        let absolute = absolutePath(root)
        var info = stat()
        guard stat(absolute, &info) == 0 else { throw WalkIssue(path: root, kind: kind(errno, "stat")) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw WalkIssue(path: root, kind: .notADirectory) }
        guard let handle = opendir(absolute) else { throw WalkIssue(path: root, kind: kind(errno, "opendir")) }
        closedir(handle)
    }

    /// The next file or issue in key order; nil when the walk is over.
    public mutating func next() -> WalkEntry? {
        while let top = stack.indices.last {
            let listed: Listed
            switch stack[top].take() {
            case .success(let taken?): listed = taken
            case .success(nil):
                let left = stack.removeLast()
                // The walk's view held: the path still names the directory listed when the walk
                // entered it (a rename away and back while it was read would give its files
                // other names, and their objects would look like objects with no file).
                if !Self.stillNames(left.path, left.identity) {
                    return .issue(WalkIssue(path: left.path, kind: .changedDuringWalk))
                }
                walked?.left(left.path, left.identity)
                continue
            case .failure(let error):
                // The sorted entries cannot be read back: the rest of the directory is not
                // walked, and the walk says so (a sync then deletes nothing).
                let left = stack.removeLast()
                return .issue(WalkIssue(path: left.path, kind: Self.spillFailed(error)))
            }
            let frame = stack[top]
            let name = listed.name
            let path = Self.join(frame.path, name)
            switch listed.kind {
            case .file(let size, let modified, let changed, let device, let inode):
                return .file(
                    WalkedFile(
                        path: path, relativePath: frame.relative + name, size: size, modified: modified,
                        changed: changed, device: device, inode: inode))
            case .issue(let kind): return .issue(WalkIssue(path: path, kind: kind))
            case .directory(let device, let inode):
                if skipped.contains(path) { continue }
                let relative = frame.relative + name + "/"
                let identity = FileIdentity(device: device, inode: inode)
                if stack.contains(where: { $0.identity == identity }) {
                    return .issue(WalkIssue(path: path, kind: .symlinkLoop))
                }
                switch Self.list(path, followsSymlinks: followsSymlinks, order: order, spill: spill) {
                case .success(let entries):
                    stack.append(Frame(path: path, relative: relative, identity: identity, entries: entries))
                case .failure(let issue):
                    return .issue(issue)
                }
            }
        }
        return nil
    }

    /// Whether `path` names the directory `identity` (following symlinks, as the walk does).
    package static func stillNames(_ path: String, _ identity: FileIdentity) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == identity
    }

    /// The entries of one directory, each stat'ed and classified, in key order: in memory, or
    /// past `spill.entriesInMemory` of them sorted on disk.
    package static func list(
        _ directory: String, followsSymlinks: Bool, order: KeyOrder = .s3, spill: Spill = Spill()
    ) -> Result<Entries, WalkIssue> {
        guard let handle = opendir(directory) else {
            return .failure(WalkIssue(path: directory, kind: kind(errno, "opendir")))
        }
        defer { closedir(handle) }
        var entries: [Listed] = []
        var sorter: RecordSorter?
        var sorted = 0
        var payload: [UInt8] = []
        do throws(SpoolError) {
            /// The entries held so far go to the sorter (made at the first time).
            func spillHeld() throws(SpoolError) {
                if sorter == nil {
                    sorter = try RecordSorter(order: order, runBytes: spill.runBytes, makeFile: spill.makeFile)
                }
                for listed in entries {
                    listed.encodedKind(into: &payload)
                    try sorter?.add(key: listed.sortKey, payload: payload)
                }
                sorted += entries.count
                entries.removeAll(keepingCapacity: true)
            }
            while true {
                errno = 0
                guard let entry = readdir(handle) else {
                    if errno != 0 { return .failure(WalkIssue(path: directory, kind: kind(errno, "readdir"))) }
                    break
                }
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    Array(raw.prefix(while: { $0 != 0 }))
                }
                if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
                entries.append(classify(bytes, in: directory, followsSymlinks: followsSymlinks))
                if entries.count > spill.entriesInMemory { try spillHeld() }
            }
            if sorter != nil {
                try spillHeld()
                guard let full = sorter.take() else { return .success(.held([])) }
                return .success(.spilled(SpilledEntries(try full.finish(), count: sorted)))
            }
        } catch {
            return .failure(WalkIssue(path: directory, kind: spillFailed(error)))
        }
        return .success(.held(ordered(entries, by: order)))
    }

    /// `entries` in key order, their keys compared in one buffer that holds them all: sorting
    /// the entries themselves retained and released a key's array at each comparison and move,
    /// a quarter of the retains a run of small files made (issue 37.11).
    static func ordered(_ entries: [Listed], by order: KeyOrder) -> [Listed] {
        guard entries.count > 1 else { return entries }
        /// Where one entry's key lies in `keys`, and which entry it is.
        struct Span {
            var start: Int
            var count: Int
            var entry: Int
        }
        var keys: [UInt8] = []
        keys.reserveCapacity(entries.reduce(0) { $0 + $1.sortKey.count })
        var spans: [Span] = []
        spans.reserveCapacity(entries.count)
        for (index, listed) in entries.enumerated() {
            spans.append(Span(start: keys.count, count: listed.sortKey.count, entry: index))
            keys.append(contentsOf: listed.sortKey)
        }
        keys.withUnsafeBytes { keys in
            spans.sort { a, b in
                order.precedes(
                    UnsafeRawBufferPointer(rebasing: keys[a.start..<(a.start + a.count)]),
                    UnsafeRawBufferPointer(rebasing: keys[b.start..<(b.start + b.count)])
                )
            }
        }
        return spans.map { entries[$0.entry] }
    }

    /// A directory whose entries could not be sorted on disk, or read back.
    package static func spillFailed(_ error: SpoolError) -> WalkIssue.Kind {
        .system(operation: "sorting its entries in a temporary file (\(error.operation))", errno: error.errno)
    }

    /// One name of `directory`: a directory to walk, a file, or an issue.
    package static func classify(_ bytes: [UInt8], in directory: String, followsSymlinks: Bool) -> Listed {
        guard let name = String(validating: bytes, as: UTF8.self) else {
            return Listed(sortKey: bytes, kind: .issue(.nameNotUTF8))
        }
        let path = join(directory, name)
        func issue(_ kind: WalkIssue.Kind) -> Listed { Listed(sortKey: bytes, kind: .issue(kind)) }
        var info = stat()
        guard lstat(path, &info) == 0 else { return issue(kind(errno, "lstat")) }
        if info.st_mode & S_IFMT == S_IFLNK {
            guard followsSymlinks else { return issue(.symlinkNotFollowed) }
            guard stat(path, &info) == 0 else {
                let code = errno
                return issue(code == ENOENT ? .brokenSymlink : kind(code, "stat"))
            }
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            return Listed(sortKey: bytes + [0x2F], kind: .directory(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        case S_IFREG where FileByteSource.isOnPseudoFileSystem(info):
            // /proc and /sys: the size is not the length (0 or 4096 for any content).
            return issue(.specialFile(kind: "file of /proc or /sys (its size is not its length)"))
        case S_IFREG:
            let modified = info.st_mtim.nanosecondsSince1970
            return Listed(
                sortKey: bytes,
                kind: .file(
                    size: Int64(info.st_size), modified: modified,
                    changed: info.st_ctim.nanosecondsSince1970, device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        case S_IFIFO: return issue(.specialFile(kind: "FIFO"))
        case S_IFSOCK: return issue(.specialFile(kind: "socket"))
        case S_IFCHR: return issue(.specialFile(kind: "character device"))
        case S_IFBLK: return issue(.specialFile(kind: "block device"))
        default: return issue(.specialFile(kind: "special file"))
        }
    }

    package static func kind(_ code: Int32, _ operation: String) -> WalkIssue.Kind {
        switch code {
        case ENOENT: return .notFound
        case EACCES, EPERM: return .permissionDenied
        case ENOTDIR: return .notADirectory
        default: return .system(operation: operation, errno: code)
        }
    }

    /// `name` in `directory` (which is `/` for the file system's root).
    package static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// `path` made absolute against the working directory and normalised lexically.
    package static func absolutePath(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }
}
