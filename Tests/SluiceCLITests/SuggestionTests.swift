import Testing

@testable import SluiceCLI
import SluiceTestSupport

/// "Did you mean …?": the closest known word, only when it is close.
@Suite struct SuggestionTests {
    static let s3Options = ["--recursive", "--dryrun", "--delete", "--exclude", "--include", "--size-only", "--endpoint-url"]

    @Test(arguments: [
        ("--dry-run", "--dryrun"),  // one insertion
        ("--recursiv", "--recursive"),  // one deletion
        ("--reucrsive", "--recursive"),  // two neighbours swapped: one edit
        ("--exlcude", "--exclude"),
        ("--sizeonly", "--size-only"),
        ("--endpoint", "--endpoint-url"),  // a prefix of one option, 4 edits away
    ])
    func aMistypedOptionGetsTheOneMeant(_ typed: String, _ meant: String) {
        #expect(Suggestion.closest(to: typed, among: Self.s3Options) == meant)
    }

    @Test func commandsAndSubcommands() {
        let commands = ["upload", "receive", "checksum", "tus", "s3", "demo"]
        #expect(Suggestion.closest(to: "uplod", among: commands) == "upload")
        #expect(Suggestion.closest(to: "tsu", among: commands) == "tus")
        #expect(Suggestion.closest(to: "synk", among: ["cp", "sync", "abort", "presign", "complete"]) == "sync")
    }

    @Test func nothingIsSuggestedWhenNothingIsClose() {
        #expect(Suggestion.closest(to: "--zzzzzzzzzz", among: Self.s3Options) == nil)
        #expect(Suggestion.closest(to: "frobnicate", among: ["upload", "receive", "tus", "s3"]) == nil)
        #expect(Suggestion.closest(to: "-Z", among: ["-F", "-H", "-X"]) == nil)  // one letter: near everything
        #expect(Suggestion.closest(to: "--dryrun", among: Self.s3Options) == nil)  // known already
        #expect(Suggestion.hint(for: "--zzzzzzzzzz", among: Self.s3Options).isEmpty)
        #expect(Suggestion.hint(for: "synk", among: ["sync"], quoted: true) == ": did you mean 'sync'?")
    }

    @Test func theDistanceStopsEarlyAndCountsSwapsAsOne() {
        let scalars = { (text: String) in Array(text.unicodeScalars) }
        #expect(Suggestion.distance(scalars("kitten"), scalars("sitting"), atMost: 5) == 3)
        #expect(Suggestion.distance(scalars("ab"), scalars("ba"), atMost: 5) == 1)
        #expect(Suggestion.distance(scalars(String(repeating: "a", count: 10_000)), scalars("b"), atMost: 2) == 3)
        #expect(Suggestion.distance(scalars(""), scalars("abc"), atMost: 5) == 3)
    }
}
