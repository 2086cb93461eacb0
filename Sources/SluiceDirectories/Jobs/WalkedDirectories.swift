#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(Floors) import SluicePrimitives

/// Every directory a walk left, with the identity (device, inode) it had, kept on disk to be
/// checked again at the end of a run: before deletions go out, each path still names the
/// directory the walk listed (`recheck`). A directory moved away and another put in its place
/// after the walk left it (`mv d x; mkdir d`) would otherwise pass unseen.
///
/// Memory is a 64 KiB write buffer, then one read buffer, whatever the number of directories.
///
/// - Important: Thread-safe (a lock); a walk records into it from whichever thread advances it.
package final class WalkedDirectories: Sendable {
    private struct State: Sendable {
        var appender: SpoolAppender?
        /// The first failure to record a directory: the record is incomplete.
        var failure: WalkIssue?
        var count = 0
        /// The first directory recorded: an unreadable record is named by it.
        var first: String?
        var record: [UInt8] = []
    }

    private let state = Lock(State())
    private let makeFile: SpoolFile.Maker

    /// An empty record; its file is made when the first directory is recorded.
    package init(makeFile: @escaping SpoolFile.Maker = SpoolFile.temporary) {
        self.makeFile = makeFile
    }

    /// Directories recorded.
    package var count: Int { state.withLock { $0.count } }

    /// Records that the walk left `path`, the directory `identity`.
    package func left(_ path: String, _ identity: DirectoryWalk.FileIdentity) {
        let makeFile = self.makeFile
        state.withLock { state in
            guard state.failure == nil else { return }
            do throws(SpoolError) {
                if state.appender == nil { state.appender = SpoolAppender(try makeFile()) }
                state.record.removeAll(keepingCapacity: true)
                RecordSorter.appendHeader(to: &state.record, key: path.utf8.count, payload: 16)
                state.record.append(contentsOf: path.utf8)
                for value in [identity.device, identity.inode] {
                    withUnsafeBytes(of: value.littleEndian) { state.record.append(contentsOf: $0) }
                }
                let record = state.record
                try record.withUnsafeBytes { raw in Result { () throws(SpoolError) in try state.appender?.append(raw) } }.get()
                state.count += 1
                if state.first == nil { state.first = path }
            } catch {
                state.failure = WalkIssue(
                    path: path, kind: .system(operation: "keeping the walked directories in a temporary file (\(error.operation))", errno: error.errno))
            }
        }
    }

    /// The directories whose path no longer names the directory the walk listed (moved, removed,
    /// replaced), each an issue `.changedDuringWalk`, read back from the file one at a time; or
    /// the one issue that kept the record from being whole.
    package func recheck() -> [WalkIssue] {
        state.withLock { state in
            if let failure = state.failure { return [failure] }
            guard var appender = state.appender else { return [] }
            var changed: [WalkIssue] = []
            do throws(SpoolError) {
                try appender.flush()
                state.appender = appender
                var reader = RunReader(file: appender.file, range: 0..<appender.offset)
                while let (key, payload) = try reader.next() {
                    let path = String(decoding: key, as: UTF8.self)
                    guard payload.count == 16 else { throw SpoolError(operation: "read (a record cut short)", errno: EIO) }
                    let words = payload.withUnsafeBytes {
                        ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian, $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian)
                    }
                    if !DirectoryWalk.stillNames(path, DirectoryWalk.FileIdentity(device: words.0, inode: words.1)) {
                        changed.append(WalkIssue(path: path, kind: .changedDuringWalk))
                    }
                }
            } catch {
                return [WalkIssue(path: state.first ?? "/", kind: .system(operation: "reading the walked directories back (\(error.operation))", errno: error.errno))]
            }
            return changed
        }
    }
}
