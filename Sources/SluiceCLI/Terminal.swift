import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#endif

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

    /// Text on stderr as it is (a progress bar's redraw), but for passwords in URLs, shown as
    /// `***` (`Redaction`): every message of every command goes through here. Failures are ignored.
    static func errorText(_ text: String) {
        var text = Redaction.secrets(in: text)
        text.withUTF8 { try? write(2, UnsafeRawBufferPointer($0)) }
    }

    /// Text on stdout.
    ///
    /// - Throws: `OutputError` when stdout cannot take it.
    static func output(_ text: String) throws {
        var text = text
        try text.withUTF8 { try write(1, UnsafeRawBufferPointer($0)) }
    }

    /// Bytes on stdout, all of them (a response body as it arrives).
    ///
    /// - Throws: `OutputError` when stdout cannot take them.
    static func output(_ bytes: UnsafeRawBufferPointer) throws {
        try write(1, bytes)
    }

    private static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
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

    /// One progress report; `files` adds a job's files done of found (the total once known).
    func report(_ progress: UploadProgress, files: (done: Int, total: Int?)? = nil) {
        switch style {
        case .none, .auto:
            return
        case .json:
            let total = progress.totalBytes.map(String.init) ?? "null"
            let counts = files.map { ",\"files_done\":\($0.done),\"files_total\":\($0.total.map(String.init) ?? "null")" } ?? ""
            Terminal.error(
                "{\"bytes_sent\":\(progress.bytesSent),\"total_bytes\":\(total),\"bytes_per_second\":\(Terminal.whole(progress.bytesPerSecond)),\"elapsed\":\(String(format: "%.3f", progress.elapsed))\(counts)}"
            )
        case .bar:
            var line = "\r"
            if let files { line += "\(files.done)/\(files.total.map(String.init) ?? "?") files  " }
            let rate = "\(Terminal.bytes(Terminal.whole(progress.bytesPerSecond)))/s"
            if let total = progress.totalBytes, total > 0 {
                let fraction = min(1, Double(progress.bytesSent) / Double(total))
                let width = 30
                let filled = Int(fraction * Double(width))
                line += "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
                line += String(format: "%5.1f%% ", fraction * 100)
                line += "\(Terminal.bytes(progress.bytesSent)) of \(Terminal.bytes(total))  \(rate)"
                if progress.bytesPerSecond > 0 {
                    let eta = Double(total - progress.bytesSent) / progress.bytesPerSecond
                    // A rate that decayed towards 0 (a stall) gives no useful ETA.
                    if eta < 100 * 3600 {
                        line += String(format: "  ETA %d:%02d", Int(eta) / 60, Int(eta) % 60)
                    } else {
                        line += "  ETA --:--"
                    }
                }
            } else {
                line += "\(Terminal.bytes(progress.bytesSent))  \(rate)"
            }
            Terminal.errorText(line + "\u{1B}[K")
        }
    }

    func end() {
        if style == .bar { Terminal.errorText("\n") }
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
