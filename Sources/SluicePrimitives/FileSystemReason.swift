import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file-system call failed, in Sluice's words: one short reason for a message, whatever
/// reported it (`errno`, `POSIXError`, Foundation's `CocoaError` with its `NSUnderlyingError`,
/// `Errno`, `RecordStoreError`). Foundation's own text (`Error Domain=NSCocoaErrorDomain
/// Code=516 "A file with the same name already exists." UserInfo={…}`) never reaches a line.
package enum FileSystemReason {
    /// The reason for `errno` value `code`.
    package static func text(errno code: Int32) -> String {
        switch code {
        case EEXIST, ENOTDIR: return "a part of the path exists and is not a directory"
        case EACCES, EPERM: return "permission denied"
        case EROFS: return "read-only file system"
        case ENOENT: return "no such file or directory (or it cannot be created there)"
        case ENOSPC: return "no space left on the device"
        case EDQUOT: return "disk quota exceeded"
        case EISDIR: return "it is a directory"
        case ELOOP: return "too many levels of symbolic links"
        case ENAMETOOLONG: return "the name is too long"
        default:
            let text = String(cString: strerror(code))
            return text.prefix(1).lowercased() + text.dropFirst()
        }
    }

    /// The reason for `error`: its `errno` in words when it has one, else its description.
    package static func text(for error: any Error) -> String {
        if let code = errno(of: error) { return text(errno: code) }
        // Foundation's errors without an errno: their one-sentence text, never the whole dump.
        if error is CocoaError || type(of: error) == NSError.self { return (error as NSError).localizedDescription }
        return "\(error)"
    }

    /// The `errno` behind `error`, where there is one.
    package static func errno(of error: any Error) -> Int32? {
        switch error {
        case let error as Errno: return error.code
        case let error as RecordStoreError: return error.code
        case let error as POSIXError: return error.code.rawValue
        case let error as CocoaError:
            if let underlying = error.underlying, let code = errno(of: underlying) { return code }
        default: break
        }
        let error = error as NSError
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, let code = errno(of: underlying) { return code }
        guard error.domain == NSCocoaErrorDomain else { return nil }
        switch CocoaError.Code(rawValue: error.code) {
        case .fileWriteFileExists: return EEXIST
        case .fileNoSuchFile, .fileReadNoSuchFile: return ENOENT
        case .fileWriteNoPermission, .fileReadNoPermission: return EACCES
        case .fileWriteVolumeReadOnly: return EROFS
        case .fileWriteOutOfSpace: return ENOSPC
        default: return nil
        }
    }
}
