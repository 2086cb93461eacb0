import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
import SluiceTestSupport

/// The progress bar fits the terminal it is drawn on: never as wide as it (a line reaching the
/// last column wraps and leaves a copy behind at each redraw), and as much as fits.
@Suite struct ProgressBarTests {
    static let progress = [
        UploadProgress(bytesSent: 0, totalBytes: 1 << 30, bytesPerSecond: 0, elapsed: 0),
        UploadProgress(bytesSent: 512 << 20, totalBytes: 1 << 30, bytesPerSecond: 123_456_789, elapsed: 4.2),
        UploadProgress(bytesSent: 1 << 30, totalBytes: 1 << 30, bytesPerSecond: 1, elapsed: 3600),
        UploadProgress(bytesSent: 987_654_321_987, totalBytes: nil, bytesPerSecond: 98_765_432, elapsed: 60),
    ]

    @Test(arguments: [1, 2, 10, 20, 39, 40, 60, 79, 80, 81, 120, 300])
    func neverAsWideAsTheTerminal(columns: Int) {
        for progress in Self.progress {
            for files in [
                nil, ProgressPrinter.FileCounts(done: 6, found: 40, final: false), ProgressPrinter.FileCounts(done: 123_456, found: 999_999, final: true),
            ] {
                let line = ProgressPrinter.barLine(progress, files: files, columns: columns)
                #expect(line.count <= max(columns - 1, 1), "\(columns) columns: \(line.count) characters: \(line)")
                #expect(!line.isEmpty)
            }
        }
    }

    @Test func aWideTerminalShowsEverything() {
        let line = ProgressPrinter.barLine(Self.progress[1], files: ProgressPrinter.FileCounts(done: 6, found: 10, final: true), columns: 200)
        #expect(line.hasPrefix("6/10 files  [###############               ]  50.0% 512.0 MiB of 1.0 GiB  117.7 MiB/s  ETA 0:04"), "\(line)")
    }

    @Test func aNarrowTerminalKeepsTheBarAndDropsTheETAFirst() {
        let wide = ProgressPrinter.barLine(Self.progress[1], files: nil, columns: 200)
        let narrower = ProgressPrinter.barLine(Self.progress[1], files: nil, columns: wide.count)
        #expect(narrower.hasPrefix("[") && narrower.count < wide.count, "\(narrower)")
        let forty = ProgressPrinter.barLine(Self.progress[1], files: nil, columns: 40)
        #expect(!forty.contains("ETA") && forty.contains(" 50.0%"), "\(forty)")
    }

    @Test func whileTheWalkGoesOnTheTotalsAreEstimates() {
        let walking = ProgressPrinter.FileCounts(done: 6, found: 40, final: false)
        let line = ProgressPrinter.barLine(Self.progress[1], files: walking, columns: 200)
        #expect(line == "6/~40 files  512.0 MiB of ~1.0 GiB  117.7 MiB/s  (calculating…)", "\(line)")
        #expect(!line.contains("%") && !line.contains("ETA"))
        let ended = ProgressPrinter.barLine(Self.progress[1], files: ProgressPrinter.FileCounts(done: 6, found: 40, final: true), columns: 200)
        #expect(ended.hasPrefix("6/40 files  [") && ended.contains(" 50.0% "), "\(ended)")
    }
}
