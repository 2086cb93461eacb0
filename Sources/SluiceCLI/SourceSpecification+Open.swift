import Sluice

extension SourceSpecification {
    /// An opened SOURCE: its upload body, and how to release it.
    struct Opened: Sendable {
        let body: UploadBody
        /// The random-access source, when there is one (regular files and synthetic).
        let source: (any ByteSource)?
        /// The sequential source, when there is one: stdin, a FIFO, a file whose size is
        /// reported as 0 but that has content (`/proc/cpuinfo`).
        let sequential: (any SequentialByteSource)?
        /// Releases file descriptors (idempotent; they are released when the last copy goes
        /// away in any case). Call after the upload.
        let close: @Sendable () -> Void
    }

    /// Opens the source for reading, never blocking (see `OpenedFile`).
    ///
    /// - Throws: `ByteSourceError` for a missing, unreadable or unsupported path.
    func open() throws -> Opened {
        switch self {
        case .file(let path):
            let file = try OpenedFile(path: path)
            switch file {
            case .randomAccess(let source):
                return Opened(body: .bytes(source), source: source, sequential: nil, close: { file.close() })
            case .sequential(let stream):
                return Opened(body: .sequential(stream), source: nil, sequential: stream, close: { file.close() })
            }
        case .standardInput:
            let stdin = FileDescriptorStream.standardInput
            return Opened(body: .sequential(stdin), source: nil, sequential: stdin, close: {})
        case .synthetic(let length, let seed):
            let source = SyntheticByteSource(length: length, seed: seed)
            return Opened(body: .bytes(source), source: source, sequential: nil, close: {})
        }
    }
}
