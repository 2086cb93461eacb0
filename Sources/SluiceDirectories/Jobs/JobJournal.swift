import Foundation
import SluicePrimitives

/// The durable record of a job of many uploads (`UploadJob`): a header naming the job, then
/// one line per file finished, appended as each finishes (`Journal`).
package typealias JobJournal = Journal<JobJournalEntry>
package typealias JobJournalError = JournalError

extension JournalError {
    /// A job record's error.
    package init(path: String, problem: Problem) {
        self.init(path: path, problem: problem, record: JobJournalEntry.recordName)
    }
}

/// What a finished item was when it was sent: a rerun sends it again if the file differs.
package struct JobJournalEntry: JournalEntry {
    package static let recordName = "job record"

    package var key: String { name }

    /// The item's name in the job (its path below the job's root).
    package var name: String
    package var size: Int64
    package var device: UInt64
    package var inode: UInt64
    package var modified: Int64
    /// The inode change time; nil in an entry written before it was recorded (which then
    /// matches no file: the file is sent again).
    package var changed: Int64?
    /// What the destination answered (an ETag), for the summary.
    package var result: String

    package init(name: String, size: Int64, device: UInt64, inode: UInt64, modified: Int64, changed: Int64?, result: String) {
        self.name = name
        self.size = size
        self.device = device
        self.inode = inode
        self.modified = modified
        self.changed = changed
        self.result = result
    }

    /// What `file` is now, sent with the answer `result`.
    package init(_ file: WalkedFile, result: String) {
        self.init(
            name: file.relativePath, size: file.size, device: file.device, inode: file.inode, modified: file.modified,
            changed: file.changed, result: result)
    }

    /// The entry as one journal line: the JSON `JSONEncoder` writes with sorted keys and
    /// unescaped slashes, and a newline, made without it (it was half of an append).
    package var line: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(name.utf8.count + result.utf8.count + 112)
        func key(_ text: String) {
            out.append(0x22)
            out.append(contentsOf: text.utf8)
            out.append(contentsOf: "\":".utf8)
        }
        func number(_ text: String) { out.append(contentsOf: text.utf8) }
        func string(_ text: String) {
            out.append(0x22)
            for byte in text.utf8 {
                switch byte {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x08: out += [0x5C, UInt8(ascii: "b")]
                case 0x0C: out += [0x5C, UInt8(ascii: "f")]
                case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                case 0x09: out += [0x5C, UInt8(ascii: "t")]
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                default: out.append(byte)
                }
            }
            out.append(0x22)
        }
        out.append(UInt8(ascii: "{"))
        if let changed { key("changed"); number(String(changed)); out.append(UInt8(ascii: ",")) }
        key("device"); number(String(device)); out.append(UInt8(ascii: ","))
        key("inode"); number(String(inode)); out.append(UInt8(ascii: ","))
        key("modified"); number(String(modified)); out.append(UInt8(ascii: ","))
        key("name"); string(name); out.append(UInt8(ascii: ","))
        key("result"); string(result); out.append(UInt8(ascii: ","))
        key("size"); number(String(size))
        out += [UInt8(ascii: "}"), 0x0A]
        return out
    }

    /// Whether `file` is still what this entry recorded: the same size, inode, modification
    /// and change times (as the single-object record, `S3SourceFingerprint`).
    package func matches(_ file: WalkedFile) -> Bool {
        size == file.size && device == file.device && inode == file.inode && modified == file.modified
            && changed == file.changed
    }
}
