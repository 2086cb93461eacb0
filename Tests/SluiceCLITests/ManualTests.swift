import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
import SluiceTestSupport

/// The man page has the sections a user looks for, made from one declaration each, and names
/// only environment variables sluice reads.
@Suite struct ManualTests {
    @Test func theManualHasExitStatusEnvironmentFilesAndExamples() {
        let page = CommandLineDescription.manual()
        let order = ["OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"].map { ".SH \($0)" }
        let positions = order.map { page.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil }, "sections: \(zip(order, positions).filter { $0.1 == nil }.map(\.0))")
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted(), "in the usual order")
        for (status, _) in CommandLineDescription.exitStatuses {
            #expect(page.contains("\\fB\(status)\\fR"), "exit status \(status)")
        }
        // --help says the same statuses, from the same list.
        let help = CommandLineDescription.help(for: [])!.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for (status, meaning) in CommandLineDescription.exitStatuses {
            #expect(help.contains("\(status) \(meaning)"), "\(status) \(meaning)")
        }
    }

    /// Every variable ENVIRONMENT names is one the library or the command line reads (a string
    /// literal of its name in Sources outside the command line's descriptions).
    @Test func theEnvironmentNamesOnlyVariablesSluiceReads() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        var text = ""
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let url as URL in enumerator where url.pathExtension == "swift" && url.lastPathComponent != "CommandLineTool.swift" {
            text += try String(contentsOf: url, encoding: .utf8)
        }
        let names = CommandLineDescription.environment.flatMap { $0.name.components(separatedBy: ", ") }
        #expect(names.count >= 10)
        for name in names {
            #expect(text.contains("\"\(name)\""), "\(name) is not read by any source file")
        }
    }
}
