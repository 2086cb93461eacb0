import Testing
@testable import Sluice
@testable import SluiceCLI
import SluiceTestSupport

/// `--stall-timeout` is one bound for the connect, the answer and the source on every command
/// (`Arguments.stallTimeout`).
struct StallTimeoutOptionTests {
    /// Before: `upload --parts` set the stall timeout alone, so its connect waited 30 s whatever
    /// `--stall-timeout` said.
    @Test func uploadPartsBoundsItsConnectByTheStallTimeout() throws {
        let command = try UploadPartsCommand(arguments: ["--parts", "plan.json", "synthetic:10", "--stall-timeout", "2"])
        #expect(command.settings.transfer.stallTimeout == .seconds(2))
        #expect(command.settings.transfer.connectTimeout == .seconds(2))
    }
}
