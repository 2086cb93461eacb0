import SluiceByteSources

/// Why a multipart/form-data part or body could not be built.
///
/// Each case reads as one line: strings that came from the user are shown escaped, so a
/// CR or LF in a name cannot break the message either.
public enum MultipartError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A part name holds a NUL byte, which no header can carry.
    case nulInName(String)
    /// A filename holds a NUL byte, which no header can carry.
    case nulInFilename(String)
    /// A content type is not `type/subtype` with optional `; name=value` parameters.
    case invalidContentType(String, reason: String)
    /// An extra part header is one Sluice writes itself, or is malformed.
    case invalidPartHeader(String, reason: String)
    /// A file part could not be opened.
    case cannotOpen(path: String, cause: ByteSourceError)
    /// A curl `-F` style argument could not be parsed.
    case invalidFormArgument(String, reason: String)

    public var description: String {
        switch self {
        case .nulInName(let name):
            return "form part name \(name.debugDescription) contains a NUL byte"
        case .nulInFilename(let filename):
            return "form filename \(filename.debugDescription) contains a NUL byte"
        case .invalidContentType(let value, let reason):
            return "invalid content type \(value.debugDescription): \(reason)"
        case .invalidPartHeader(let value, let reason):
            return "invalid part header \(value.debugDescription): \(reason)"
        case .cannotOpen(let path, .unknownLength):
            return "cannot read form file \(path.debugDescription): its reported size is not its length (a /proc or /sys file) and it holds more than "
                + "\(FileStreamSource.snapshotLimit >> 20) MiB or is not a regular file; a form part needs its length up front "
                + "(copy it to a regular file first)"
        case .cannotOpen(let path, let cause):
            return "cannot read form file \(path.debugDescription): \(cause)"
        case .invalidFormArgument(let argument, let reason):
            return "invalid form argument \(argument.debugDescription): \(reason)"
        }
    }
}
