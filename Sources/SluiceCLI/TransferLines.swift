import Foundation
import Sluice
@_spi(Floors) import SluicePrimitives

/// What `s3 cp`, `s3 cp -r` and `s3 sync` print on stdout as they go, as the AWS CLI prints it:
/// `upload: ./f to s3://b/k` once a file is stored, `delete: s3://b/k` once an object is
/// deleted, each after `(dryrun) ` in a dry run. The summary stays on stderr.
struct TransferLines: Sendable {
    /// How much a run says (`--only-show-errors`, `--quiet`).
    enum Level: Sendable {
        /// Every line, the progress display and the summary.
        case all
        /// Failures and warnings only (`--only-show-errors`): nothing on success.
        case onlyErrors
        /// Failures only (`--quiet`): nothing on success, no warnings.
        case quiet
    }

    let level: Level
    let dryRun: Bool
    /// The working directory paths are shown relative to, as the AWS CLI shows them.
    let workingDirectory: String
    /// `workingDirectory`'s components, made absolute once (not once a line).
    private let workingComponents: [Substring]
    /// The first error of stdout (closed, full): the run ends with 1 once it is done.
    private let failure = Lock<OutputError?>(nil)
    /// The directory of the last file a line showed, as given and as shown: a job's files come
    /// directory by directory, so a directory is made relative once, not once a file (its
    /// components split and compared, a run of small files' 1 %: issue 37.11).
    private let lastDirectory = Lock<(given: Substring, shown: String)?>(nil)

    init(level: Level, dryRun: Bool, workingDirectory: String = FileManager.default.currentDirectoryPath) {
        self.level = level
        self.dryRun = dryRun
        self.workingDirectory = workingDirectory
        workingComponents = DirectoryWalk.absolutePath(workingDirectory).split(separator: "/")
    }

    /// Whether a run's summary and notes of success are shown (not under `--quiet` or
    /// `--only-show-errors`).
    var showsSummary: Bool { level == .all }
    /// Whether warnings are shown (paths passed over on purpose): not under `--quiet`.
    var showsWarnings: Bool { level != .quiet }

    /// The progress display to draw: none under `--quiet` or `--only-show-errors`, unless JSON
    /// lines were asked for (a program reads those).
    func progress(_ style: ProgressPrinter.Style) -> ProgressPrinter.Style {
        level == .all || style == .json ? style : .none
    }

    /// `upload: PATH to URL` for the file at `path` (absolute, or as typed), stored as `url`.
    func upload(_ path: String, to url: String) {
        guard level == .all else { return }
        upload(shown: shown(path), to: url)
    }

    /// `path` as `shown(_:from:)` shows it from the working directory, its directory's part
    /// taken from the last line's where it is the same directory.
    func shown(_ path: String) -> String {
        // An ASCII path's last name (not empty, `.` or `..`) ends what `shown` gives, as itself.
        guard path.utf8.allSatisfy({ $0 < 0x80 }), let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return Self.shown(path, from: workingComponents)
        }
        let directory = path[..<slash]
        let name = path.utf8[path.utf8.index(after: slash)...]
        guard !name.isEmpty, !name.elementsEqual(".".utf8), !name.elementsEqual("..".utf8) else {
            return Self.shown(path, from: workingComponents)
        }
        if let last = lastDirectory.withLock({ $0 }), last.given == directory {
            return last.shown + String(Substring(name))
        }
        let shown = Self.shown(path, from: workingComponents)
        let prefix = String(decoding: shown.utf8.dropLast(name.count), as: UTF8.self)
        lastDirectory.withLock { $0 = (directory, prefix) }
        return shown
    }

    /// `upload: SOURCE to URL` for a source that is no file (`synthetic:…`), shown as it is.
    func upload(shown source: String, to url: String) {
        // One line each, whatever a name holds: control characters shown escaped (`\u{A}`).
        line("upload: \(source.controlCharactersEscaped) to \(url.controlCharactersEscaped)")
    }

    /// `copy: SOURCE to DESTINATION` (both `s3://…`, as `S3Location` shows them).
    func copy(_ told: String) {
        line("copy: \(told)")
    }

    /// `delete: URL`.
    func delete(_ url: String) {
        line("delete: \(url.controlCharactersEscaped)")
    }

    /// The line of a job's event about a file under `bucket`.
    func tell(_ event: UploadJobEvent, bucket: String) {
        guard level == .all else { return }
        switch event {
        case .sent(let file, let key), .wouldSend(let file, let key): upload(file.path, to: "s3://\(bucket)/\(key)")
        }
    }

    /// Why stdout could not take a line, if it could not; the lines still held written first
    /// (`Terminal.line`), so it is asked once the run's lines are all given.
    var outputError: OutputError? {
        let held = level == .all ? Terminal.flushLines() : nil
        return failure.withLock { failure in
            failure = failure ?? held
            return failure
        }
    }

    /// One line on stdout; lines that come faster than the display's tick go out together
    /// (`Terminal.line`), in the same bytes and order.
    private func line(_ text: String) {
        guard level == .all, failure.withLock({ $0 == nil }) else { return }
        do { try Terminal.line((dryRun ? "(dryrun) " : "") + text + "\n") } catch {
            failure.withLock { $0 = $0 ?? error }
        }
    }

    /// `path` as the AWS CLI shows a local file: its directory relative to `workingDirectory`,
    /// then its name (`./f`, `tree/a`, `../x/f`); both made absolute lexically, as Python's
    /// `os.path.relpath` does.
    static func shown(_ path: String, from workingDirectory: String) -> String {
        shown(path, from: DirectoryWalk.absolutePath(workingDirectory).split(separator: "/"))
    }

    /// `path` as `shown(_:from:)` shows it, from the working directory's absolute components.
    private static func shown(_ path: String, from start: [Substring]) -> String {
        guard !path.isEmpty, !path.hasSuffix("/") else { return path }
        // `.` and `..` resolved lexically, as the walk makes its root absolute.
        var absolute: [Substring] = path.hasPrefix("/") ? [] : start
        // An ASCII path split by its bytes (a split by characters looks for grapheme
        // boundaries, once a file of a job); either gives the same names.
        let parts =
            path.utf8.allSatisfy({ $0 < 0x80 })
            ? path.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) } : path.split(separator: "/")
        for part in parts {
            switch part {
            case ".": continue
            case "..": if !absolute.isEmpty { absolute.removeLast() }
            default: absolute.append(part)
            }
        }
        guard let name = absolute.last else { return path }
        let directory = absolute.dropLast()
        var common = 0
        while common < start.count, common < directory.count, start[common] == directory[directory.startIndex + common] { common += 1 }
        let relative = Array(repeating: "..", count: start.count - common) + directory.dropFirst(common)
        return (relative.isEmpty ? "." : relative.joined(separator: "/")) + "/" + name
    }
}
