import SluiceS3

/// How `s3 sync` decides that a file is sent over the object a listing shows for its key: the
/// AWS CLI's rules (`aws s3 sync`), in one place.
public enum SyncComparison: Sendable, Equatable {
    /// The AWS CLI's default: sent when the object is missing, the sizes differ, or the file's
    /// modification time is newer than the object's `LastModified`.
    case sizeAndTime
    /// `--size-only`: sent when the object is missing or the sizes differ.
    case sizeOnly
    /// `--checksum`: sent when the object is missing, the sizes differ, or the file's bytes
    /// differ from what the object's checksum or ETag says it holds (`SyncContentCheck`, made
    /// by `S3SyncPlanner`); an object with nothing to compare falls back to `.sizeAndTime`.
    case checksum

    /// Why a file is sent.
    public enum Reason: String, Sendable, Equatable {
        /// No object has its key.
        case missing
        /// The object's size differs from the file's.
        case sizeDiffers
        /// The file was modified after the object was written.
        case newer
        /// The file's bytes differ from the object's (`--checksum`).
        case contentDiffers
    }

    /// Why `file` is sent over `object`, or nil when the object is taken to hold it, as far as
    /// the listing tells (`.checksum` here is `.sizeAndTime`, its fallback).
    ///
    /// Times compare at the microsecond, as the AWS CLI compares Python `datetime`s (the
    /// file's time rounded to it, the object's as S3 writes it: whole seconds or milliseconds).
    /// A file rewritten with its size kept and an older time set (`touch -r`, `cp -p`) is not
    /// sent: the AWS CLI misses it too.
    public func reason(toSend file: WalkedFile, over object: S3ListedObject?) -> Reason? {
        guard let object else { return .missing }
        if object.size != file.size { return .sizeDiffers }
        switch self {
        case .sizeOnly: return nil
        case .sizeAndTime, .checksum:
            let fileMicroseconds = (file.modified + 500).floorDivided(by: 1_000)
            let objectMicroseconds = object.lastModified.floorDivided(by: 1_000)
            return fileMicroseconds > objectMicroseconds ? .newer : nil
        }
    }
}

extension Int64 {
    /// `self / divisor` rounded down (toward minus infinity).
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
