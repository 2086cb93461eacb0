import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#endif
@_spi(Floors) import SluicePrimitives

/// stdout could not be written (a full disk, a closed pipe): one line, exit 1.
struct OutputError: Error, CustomStringConvertible {
    let errorNumber: Int32
    var description: String { "cannot write to stdout: \(String(cString: strerror(errorNumber)))" }
}

/// Writing to stderr/stdout with write(2): no buffering, no trap on a write error.
enum Terminal {
    /// One line on stderr; a failure to write it is ignored (there is nowhere left to say so).
    static func error(_ line: String) {
        errorText(line + "\n")
    }

    /// Text on stderr as it is, but for passwords in URLs, shown as `***` (`Redaction`): every
    /// message of every command goes through here. A progress bar on the line is cleared first,
    /// so the text stands whole and the next redraw comes below it. Failures are ignored.
    static func errorText(_ text: String) {
        var text = Redaction.secrets(in: text)
        screen.withLock { screen in
            // The lines held for stdout go first: both streams keep the order things happened.
            writeHeldLines(&screen)
            if screen.barShown { clearBar() }
            screen.barShown = false
            text.withUTF8 { try? write(2, UnsafeRawBufferPointer($0)) }
        }
    }

    /// A progress bar's redraw on stderr: `line` (no line break) from the line's start, the
    /// rest of the line cleared. Failures are ignored.
    static func drawBar(_ line: String) {
        var text = "\r" + Redaction.secrets(in: line) + "\u{1B}[K"
        screen.withLock { screen in
            writeHeldLines(&screen)
            // A response body that ended mid-line on the same terminal keeps its line.
            if screen.stdoutLineOpen { writeStatic("\n", to: 1) }
            screen.stdoutLineOpen = false
            screen.barShown = true
            text.withUTF8 { try? write(2, UnsafeRawBufferPointer($0)) }
        }
    }

    /// Ends a progress bar's line: the bar stays, what follows starts below it.
    static func endBar() {
        screen.withLock { screen in
            writeHeldLines(&screen)
            if screen.barShown { writeStatic("\n") }
            screen.barShown = false
        }
    }

    /// What is on the terminal's current line. Writes of anything else to the same terminal
    /// clear a bar first, under this lock, so a redraw cannot come between the two.
    private struct Screen {
        /// Whether a progress bar is on stderr's current line.
        var barShown = false
        /// Whether what a terminal stdout was last given ended mid-line.
        var stdoutLineOpen = false
        /// Lines for stdout not written yet (`line(_:)`): at most `heldLinesBound` bytes, for
        /// at most `lineTick`.
        var heldLines: [UInt8] = []
        /// When held lines were last written (nil: never).
        var linesWritten: ContinuousClock.Instant?
        /// Whether a write of the held lines is due at the end of a tick.
        var tickArmed = false
        /// The first error of stdout met while writing held lines: every later line is refused
        /// with it, and `flushLines` returns it.
        var linesFailure: OutputError?
    }
    private static let screen = Lock(Screen())

    /// `\r` and clear-to-end-of-line on stderr: the bar's line, emptied.
    private static func clearBar() { writeStatic("\r\u{1B}[K") }

    private static func writeStatic(_ text: StaticString, to fd: Int32 = 2) {
        _ = try? write(fd, UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Text on stdout.
    ///
    /// - Throws: `OutputError` when stdout cannot take it.
    static func output(_ text: String) throws {
        var text = text
        try text.withUTF8 { try output(UnsafeRawBufferPointer($0)) }
    }

    /// Bytes on stdout, all of them (a response body as it arrives). When stdout is the terminal
    /// a progress bar is drawn on, the bar is cleared first, so the bytes start on a clean line.
    ///
    /// - Throws: `OutputError` when stdout cannot take them.
    static func output(_ bytes: UnsafeRawBufferPointer) throws {
        try screen.withLock { screen in
            writeHeldLines(&screen)
            try writeOut(bytes, &screen)
        }
    }

    /// `bytes` on stdout, a progress bar on the same terminal cleared first; under `screen`'s lock.
    private static func writeOut(_ bytes: UnsafeRawBufferPointer, _ screen: inout Screen) throws(OutputError) {
        guard stdoutIsTerminal else { return try write(1, bytes) }
        if screen.barShown { clearBar() }
        screen.barShown = false
        try write(1, bytes)
        if let last = bytes.last { screen.stdoutLineOpen = last != UInt8(ascii: "\n") }
    }

    /// How long a line for stdout may wait to be written with those after it: the progress
    /// display's tick. Lines that come faster (a job of small files: thousands a second) go
    /// out in one write a tick, not one write each.
    static let lineTick = Duration.milliseconds(100)
    /// The most bytes of lines held before they are written, whatever the tick.
    static let heldLinesBound = 32 << 10

    /// `text` (whole lines) on stdout: at once when no line was written within the last
    /// `lineTick`, else held and written with the lines after it at the end of the tick, when
    /// `heldLinesBound` bytes are held, before anything else is written on stdout or stderr (an
    /// error line, a progress bar, a signal's line), or at `flushLines`. Bytes and order are
    /// those of one write a line.
    ///
    /// - Throws: `OutputError` when stdout could not take this line or one held before it;
    ///   every later call throws the same.
    static func line(_ text: String) throws(OutputError) {
        let (arm, failure) = screen.withLock { screen -> (Bool, OutputError?) in
            if let failure = screen.linesFailure { return (false, failure) }
            screen.heldLines.append(contentsOf: text.utf8)
            let now = ContinuousClock.now
            let quiet = screen.linesWritten.map { now - $0 >= lineTick } ?? true
            if screen.heldLines.count >= heldLinesBound || (quiet && !screen.tickArmed) {
                writeHeldLines(&screen, at: now)
                return (false, screen.linesFailure)
            }
            guard !screen.tickArmed else { return (false, nil) }
            screen.tickArmed = true
            return (true, nil)
        }
        if let failure { throw failure }
        if arm {
            Task.detached {
                try? await Task.sleep(for: lineTick)
                _ = flushLines()
            }
        }
    }

    /// Writes the lines `line(_:)` holds.
    ///
    /// - Returns: The first error of stdout met by a held line, if any (now or before).
    @discardableResult
    static func flushLines() -> OutputError? {
        screen.withLock { screen in
            screen.tickArmed = false
            writeHeldLines(&screen)
            return screen.linesFailure
        }
    }

    /// The held lines written, under `screen`'s lock; a failure kept in `linesFailure`.
    private static func writeHeldLines(_ screen: inout Screen, at now: ContinuousClock.Instant? = nil) {
        guard !screen.heldLines.isEmpty else { return }
        defer { screen.heldLines.removeAll(keepingCapacity: true) }
        screen.linesWritten = now ?? ContinuousClock.now
        guard screen.linesFailure == nil else { return }
        let held = screen.heldLines
        do { try held.withUnsafeBytes { try writeOut($0, &screen) } } catch {
            screen.linesFailure = error as? OutputError ?? OutputError(errorNumber: EIO)
        }
    }

    private static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(OutputError) {
        var done = 0
        while done < bytes.count {
            #if canImport(Glibc)
            let count = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            #else
            let count = Darwin.write(fd, bytes.baseAddress! + done, bytes.count - done)
            #endif
            if count < 0 {
                if errno == EINTR { continue }
                throw OutputError(errorNumber: errno)
            }
            done += count
        }
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
    private static let stdoutIsTerminal = isatty(1) == 1

    /// stderr's terminal width in columns (`TIOCGWINSZ`, asked at each redraw, so a resized
    /// window is followed at once); 80 when it does not say.
    static func columns() -> Int {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Human-readable bytes: 1.5 GiB.
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// `value` rounded down into an Int64: 0 for NaN and negatives, Int64.max at most (no trap).
    static func whole(_ value: Double) -> Int64 {
        guard value.isFinite, value > 0 else { return value == .infinity ? .max : 0 }
        return value >= 9.2e18 ? .max : Int64(value)
    }

    /// Peak resident memory of this process (VmHWM), in bytes.
    static func peakResidentBytes() -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let digits = line.split(separator: " ").dropFirst().first.flatMap { Int64($0) }
            return digits.map { $0 * 1024 }
        }
        return nil
    }
}

/// Draws progress on stderr: a bar with rate and ETA, or JSON lines.
struct ProgressPrinter: Sendable {
    enum Style: String {
        case auto, bar, json, none
    }

    let style: Style

    init(style: Style) {
        if style == .auto {
            self.style = Terminal.stderrIsTerminal ? .bar : .none
        } else {
            self.style = style
        }
    }

    /// A job's files in a report: done, and found so far by a walk that may still be going.
    struct FileCounts: Sendable {
        var done: Int
        var found: Int
        /// Whether the walk ended: `found` (and the report's bytes total) is the total, not
        /// what was found so far.
        var final: Bool

        /// The total, once known.
        var total: Int? { final ? found : nil }
    }

    /// One progress report; `files` adds a job's files done of found. While the walk goes on,
    /// the bar shows what was found so far as an estimate (`~`, as the AWS CLI does), `--progress
    /// json` no total.
    func report(_ progress: UploadProgress, files: FileCounts? = nil) {
        switch style {
        case .none, .auto:
            return
        case .json:
            let total = files?.final == false ? "null" : progress.totalBytes.map(String.init) ?? "null"
            let counts = files.map { ",\"files_done\":\($0.done),\"files_total\":\($0.total.map(String.init) ?? "null")" } ?? ""
            Terminal.error(
                "{\"bytes_sent\":\(progress.bytesSent),\"total_bytes\":\(total),\"bytes_per_second\":\(Terminal.whole(progress.bytesPerSecond)),\"elapsed\":\(String(format: "%.3f", progress.elapsed))\(counts)}"
            )
        case .bar:
            Terminal.drawBar(Self.barLine(progress, files: files, columns: Terminal.columns()))
        }
    }

    func end() {
        if style == .bar { Terminal.endBar() }
    }

    /// The bar's line for a terminal `columns` wide, at most `columns - 1` characters (a line
    /// that reaches the last column wraps on some terminals and leaves a copy behind at each
    /// redraw): the bar narrows first (30 to 10 cells), then the ETA, the bar, the rate and the
    /// total drop out, in that order.
    /// While a job's walk goes on, the totals are what it found so far: `6/~40 files  1.2 MiB of
    /// ~3.4 MiB  rate  (calculating…)`, no percentage, bar or ETA.
    static func barLine(_ progress: UploadProgress, files: FileCounts?, columns: Int) -> String {
        let room = max(columns - 1, 1)
        let estimate = files?.final == false
        let count = files.map { "\($0.done)/\(estimate ? "~" : "")\($0.found) files  " } ?? ""
        let rate = "\(Terminal.bytes(Terminal.whole(progress.bytesPerSecond)))/s"
        if estimate {
            let sent = Terminal.bytes(progress.bytesSent)
            let amounts = progress.totalBytes.map { "\(sent) of ~\(Terminal.bytes($0))" } ?? sent
            return fit([count + "\(amounts)  \(rate)  (calculating…)", count + "\(amounts)  \(rate)", count + amounts, count + sent], room)
        }
        guard let total = progress.totalBytes, total > 0 else {
            return fit([count + "\(Terminal.bytes(progress.bytesSent))  \(rate)", count + Terminal.bytes(progress.bytesSent)], room)
        }
        let fraction = min(1, Double(progress.bytesSent) / Double(total))
        let percent = String(format: "%5.1f%%", fraction * 100)
        let amounts = "\(Terminal.bytes(progress.bytesSent)) of \(Terminal.bytes(total))"
        var eta = ""
        if progress.bytesPerSecond > 0 {
            let seconds = Double(total - progress.bytesSent) / progress.bytesPerSecond
            // A rate that decayed towards 0 (a stall) gives no useful ETA.
            eta = seconds < 100 * 3600 ? String(format: "  ETA %d:%02d", Int(seconds) / 60, Int(seconds) % 60) : "  ETA --:--"
        }
        func bar(_ rest: String) -> String? {
            let width = min(30, room - rest.count - 3)
            guard width >= 10 else { return nil }
            let filled = Int(fraction * Double(width))
            return count + "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] " + rest
        }
        let full = "\(percent) \(amounts)  \(rate)\(eta)"
        let candidates = [
            bar(full), bar("\(percent) \(amounts)  \(rate)"), count + full, count + "\(percent) \(amounts)  \(rate)",
            count + "\(percent) \(amounts)", count + "\(percent) \(Terminal.bytes(progress.bytesSent))", percent,
        ]
        return fit(candidates.compactMap { $0 }, room)
    }

    /// The first of `lines` that fits in `room` characters, else the last cut to `room`.
    private static func fit(_ lines: [String], _ room: Int) -> String {
        lines.first { $0.count <= room } ?? String(lines[lines.count - 1].prefix(room))
    }
}

extension ProgressPrinter {
    /// `run`, for work that reports through the printer itself (a job's files as well as bytes).
    static func runReporting<Value: Sendable>(
        style: Style, _ work: @escaping @Sendable (_ printer: ProgressPrinter) async throws -> Value
    ) async -> Result<Value, any Error> {
        let printer = ProgressPrinter(style: style)
        let task = Task { try await work(printer) }
        let signals = SignalWatcher { _ in task.cancel() }
        defer { signals.stop() }
        let result = await task.result
        printer.end()
        return result
    }

    /// Runs `work` in a task that draws progress in `style` and is cancelled by SIGINT or
    /// SIGTERM; returns its result once the task ended and the progress line is finished.
    static func run<Value: Sendable>(
        style: Style, _ work: @escaping @Sendable (_ report: @escaping @Sendable (UploadProgress) -> Void) async throws -> Value
    ) async -> Result<Value, any Error> {
        await runReporting(style: style) { printer in try await work { printer.report($0) } }
    }
}
