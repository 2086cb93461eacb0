/// A source whose bytes are a file's: its change time (`ctime`) when it was opened, and its
/// size and change time now. The racily-clean checks read these (`SourceSnapshot`), never the
/// path, so they speak of the bytes read, whatever the path names since.
///
/// - Important: A write moves the change time only when the clock has passed the tick it was
///   stamped with: a write within that tick leaves it where it was (the file system's
///   timestamp granularity). Tests give a source whose writes behave so at a gate.
package protocol ChangeTimedSource: ByteSource {
    /// The change time when the source was opened, nanoseconds since 1970.
    var openedChangeTime: Int64 { get }

    /// The size and change time (nanoseconds since 1970) now.
    ///
    /// - Throws: `ByteSourceError` when they cannot be read.
    func currentSizeAndChangeTime() throws -> (size: Int64, change: Int64)
}

extension FileByteSource: ChangeTimedSource {
    package var openedChangeTime: Int64 { timesInNanoseconds.change }
}
