import Foundation
import Testing

/// Runs one test alone in a child copy of this test process, so that what it counts (open
/// descriptors, threads) is not blurred by the suites that run in parallel in this one.
///
/// The child test is enabled only in the child: `@Test(.enabled(if: Isolated.isChild("name")))`.
package enum Isolated {
    package static let variable = "SLUICE_ISOLATED_TEST"

    /// Whether this process is the child started for `name`.
    package static func isChild(_ name: String) -> Bool {
        ProcessInfo.processInfo.environment[variable] == name
    }

    /// Whether this process is any isolated child (parents skip their own work there).
    package static var inChild: Bool { ProcessInfo.processInfo.environment[variable] != nil }

    /// Runs the test whose name matches `name` in a child process; its exit status and output.
    package static func run(_ name: String) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", name]
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = name
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = await onThread { () -> String in
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        return (process.terminationStatus, text)
    }
}
