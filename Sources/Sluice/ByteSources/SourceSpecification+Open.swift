extension SourceSpecification {
    /// An opened SOURCE: its upload body, and how to release it.
    public struct Opened: Sendable {
        public let body: UploadBody
        /// The random-access source, when there is one (files and synthetic).
        public let source: (any ByteSource)?
        /// Releases file descriptors; call once, after the upload.
        public let close: @Sendable () -> Void
    }

    /// Opens the source for reading.
    ///
    /// - Throws: `ByteSourceError` for a missing, unreadable or non-regular file.
    public func open() throws -> Opened {
        switch self {
        case .file(let path):
            let file = try FileByteSource(path: path)
            return Opened(body: .bytes(file), source: file, close: { file.close() })
        case .standardInput:
            return Opened(body: .sequential(FileDescriptorStream.standardInput), source: nil, close: {})
        case .synthetic(let length, let seed):
            let source = SyntheticByteSource(length: length, seed: seed)
            return Opened(body: .bytes(source), source: source, close: {})
        }
    }
}
