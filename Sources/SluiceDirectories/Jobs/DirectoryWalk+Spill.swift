#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(Floors) import SluicePrimitives

extension DirectoryWalk {
    /// How a walk holds one directory's entries: in memory up to `entriesInMemory`, and a larger
    /// directory's sorted on disk (`RecordSorter`, the external sort the lists use), read back
    /// merged in key order. A directory of 1,000,000 names then costs the sorter's run (4 MiB)
    /// and a 64 KiB read buffer a run, not 1,000,000 `Listed` values (about 100 bytes each).
    package struct Spill: Sendable {
        /// Entries of one directory held in memory; a directory with more is sorted on disk.
        package var entriesInMemory: Int
        /// The sorter's run: bytes of records held before a run is sorted and written.
        package var runBytes: Int
        /// Makes the sorter's temporary files (tests hand one whose writes fail).
        package var makeFile: SpoolFile.Maker

        /// The default bound: 32,768 entries (a few MiB) in memory.
        package init(entriesInMemory: Int = 32_768, runBytes: Int = 4 << 20, makeFile: @escaping SpoolFile.Maker = SpoolFile.temporary) {
            precondition(entriesInMemory > 0, "a walk holds at least one entry in memory")
            self.entriesInMemory = entriesInMemory
            self.runBytes = runBytes
            self.makeFile = makeFile
        }
    }

    /// One directory's entries in key order: held in memory, or sorted on disk.
    package enum Entries: Sendable {
        case held([Listed])
        case spilled(SpilledEntries)
    }
}

/// A directory's entries sorted on disk, read back one at a time in key order.
///
/// A reference (the merge's position and buffers are not copied with the walk, which is copied
/// into each trip to the blocking pool): copies of a walk share where they are in a spilled
/// directory, so only one copy is advanced, as `UploadJob` does.
package final class SpilledEntries: Sendable {
    private let merge: Lock<RecordMerge>
    /// Entries sorted.
    package let count: Int

    package init(_ sorted: SortedRecords, count: Int) {
        merge = Lock(sorted.merged())
        self.count = count
    }

    /// The next entry; nil after the last.
    ///
    /// - Throws: `SpoolError` when the file cannot be read, or a record is not one this walk wrote.
    package func next() throws(SpoolError) -> DirectoryWalk.Listed? {
        let record = try merge.withLock { merge in Result { () throws(SpoolError) in try merge.next() } }.get()
        guard let record else { return nil }
        guard let kind = DirectoryWalk.Listed.decodeKind(record.payload) else {
            throw SpoolError(operation: "read (an entry record that does not decode)", errno: EIO)
        }
        return DirectoryWalk.Listed(sortKey: record.key, kind: kind)
    }
}

extension DirectoryWalk.Listed {
    /// The kind as a sorter's payload: a tag byte, then the numbers (little-endian), or an
    /// issue's tag, `errno` and text.
    package func encodedKind(into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        func put(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        switch kind {
        case .directory(let device, let inode):
            bytes.append(0)
            put(device)
            put(inode)
        case .file(let size, let modified, let changed, let device, let inode):
            bytes.append(1)
            for value in [UInt64(bitPattern: size), UInt64(bitPattern: modified), UInt64(bitPattern: changed), device, inode] {
                put(value)
            }
        case .issue(let issue):
            bytes.append(2)
            let (tag, code, text): (UInt8, Int32, String) =
                switch issue {
                case .specialFile(let kind): (0, 0, kind)
                case .symlinkNotFollowed: (1, 0, "")
                case .symlinkLoop: (2, 0, "")
                case .brokenSymlink: (3, 0, "")
                case .nameNotUTF8: (4, 0, "")
                case .notFound: (5, 0, "")
                case .notADirectory: (6, 0, "")
                case .permissionDenied: (7, 0, "")
                case .system(let operation, let errno): (8, errno, operation)
                case .changedDuringWalk: (9, 0, "")
                }
            bytes.append(tag)
            put(UInt64(UInt32(bitPattern: code)))
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// The kind `encodedKind` wrote; nil for bytes it did not write.
    package static func decodeKind(_ bytes: [UInt8]) -> Kind? {
        func word(_ index: Int) -> UInt64? {
            let start = 1 + 8 * index
            guard bytes.count >= start + 8 else { return nil }
            var value: UInt64 = 0
            for offset in (0..<8).reversed() { value = value << 8 | UInt64(bytes[start + offset]) }
            return value
        }
        switch bytes.first {
        case 0:
            guard bytes.count == 17, let device = word(0), let inode = word(1) else { return nil }
            return .directory(device: device, inode: inode)
        case 1:
            guard bytes.count == 41, let size = word(0), let modified = word(1), let changed = word(2), let device = word(3),
                let inode = word(4)
            else { return nil }
            return .file(
                size: Int64(bitPattern: size), modified: Int64(bitPattern: modified), changed: Int64(bitPattern: changed),
                device: device, inode: inode)
        case 2:
            guard bytes.count >= 10 else { return nil }
            // The tag, then errno as a word from byte 2 (the word helper counts from byte 1).
            var code: UInt64 = 0
            for offset in (0..<8).reversed() { code = code << 8 | UInt64(bytes[2 + offset]) }
            let text = String(decoding: bytes[10...], as: UTF8.self)
            switch bytes[1] {
            case 0: return .issue(.specialFile(kind: text))
            case 1: return .issue(.symlinkNotFollowed)
            case 2: return .issue(.symlinkLoop)
            case 3: return .issue(.brokenSymlink)
            case 4: return .issue(.nameNotUTF8)
            case 5: return .issue(.notFound)
            case 6: return .issue(.notADirectory)
            case 7: return .issue(.permissionDenied)
            case 8: return .issue(.system(operation: text, errno: Int32(bitPattern: UInt32(truncatingIfNeeded: code))))
            case 9: return .issue(.changedDuringWalk)
            default: return nil
            }
        default: return nil
        }
    }
}
