import SluiceS3

/// The objects of a prefix copy named by a list (`--files-from FILE|-` with an `s3://` source):
/// keys relative to the source's prefix, read once, checked whole before any request, and
/// yielded in key order, each once, in bounded memory however long the list.
///
/// - One key a line or (`PathList.Separator.nul`) ended by NUL bytes; each taken byte for byte
///   (a key may hold spaces, `//`, a leading `/`); empty entries are passed over.
/// - A key that is not UTF-8, or longer than S3's 1,024 bytes once the prefix is put before it,
///   fails the whole list (`PathListError`), so nothing is copied from a list with a mistake.
/// - Sorted on disk (`RecordSorter`) into the order of the listings it is joined with.
public final class KeyList: Sendable {
    private let sorted: SortedRecords

    /// Reads the list from `descriptor` to its end and checks every key.
    ///
    /// - Parameters:
    ///   - descriptor: Where the list is read from (a file, or stdin); not closed.
    ///   - prefix: The source's prefix the keys are below (for the length check).
    ///   - separator: How the keys are separated.
    ///   - limit: The most bytes the list may hold (`PathList.maximumListBytes`).
    /// - Throws: `PathListError`, at the list's first entry that is not a key when the list is
    ///   not one (a NUL in a list of lines, an entry longer than a path, too many bytes).
    public init(
        reading descriptor: Int32, prefix: String, separator: PathList.Separator, limit: Int64 = PathList.maximumListBytes
    ) throws(PathListError) {
        var sorter = try RecordSorter.forList()
        var reader = EntryReader(descriptor: descriptor, separator: separator, limit: limit)
        var refusals = ListRefusals()
        var empties = 0
        while let bytes = try reader.next(separator, refusals: &refusals) {
            guard !bytes.isEmpty else {
                empties += 1
                if empties > PathList.maximumPathBytes { throw refusals.end(.noPath(bytes: empties)) }
                continue
            }
            empties = 0
            let shown = String(decoding: bytes, as: UTF8.self)
            if separator == .newline, bytes.contains(0) { throw refusals.end(.holdsNUL) }
            guard String(validating: bytes, as: UTF8.self) != nil else { throw refusals.end(.notUTF8(shown)) }
            guard prefix.utf8.count + bytes.count <= S3Location.maximumKeyLength else {
                refusals.refuse(.keyTooLong(shown))
                continue
            }
            do throws(SpoolError) { try sorter.add(key: bytes, payload: []) } catch {
                throw PathListError(problem: .spool(error), count: 1)
            }
        }
        try refusals.check()
        do throws(SpoolError) { sorted = try sorter.finish() } catch { throw PathListError(problem: .spool(error), count: 1) }
    }

    /// The keys in `order`, each once.
    ///
    /// - Throws: `SpoolError` when the list cannot be sorted again in another order.
    package func keys(in order: KeyOrder) throws(SpoolError) -> Keys {
        guard order != sorted.order else { return Keys(merge: sorted.merged()) }
        var again = try RecordSorter(order: order)
        var merge = sorted.merged()
        while let (key, _) = try merge.next() { try again.add(key: key, payload: []) }
        return Keys(merge: try again.finish().merged())
    }

    /// A list's keys, in order, each once.
    package struct Keys {
        private var merge: RecordMerge
        private var last: [UInt8]?

        init(merge: RecordMerge) {
            self.merge = merge
        }

        /// The next key; nil after the last.
        package mutating func next() throws(SpoolError) -> String? {
            while let (key, _) = try merge.next() {
                if key == last { continue }
                last = key
                return String(decoding: key, as: UTF8.self)
            }
            return nil
        }
    }
}
