import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
import SluiceTestSupport

/// What the command line parses before any library call: sizes, SOURCE, tus metadata.
@Suite struct ArgumentParsingTests {
    @Test func sizesParse() throws {
        #expect(try ByteCount.parse("123") == 123)
        #expect(try ByteCount.parse("64MiB") == 64 << 20)
        #expect(try ByteCount.parse("2GB") == 2_000_000_000)
        #expect(try ByteCount.parse("1.5KiB") == 1536)
        #expect(try ByteCount.parse("4TiB") == 4 << 40)
        for bad in ["", "abc", "-5", "12XB", "1e99GiB", "99999999999TiB"] {
            #expect(throws: UsageError.self, "\(bad)") { try ByteCount.parse(bad) }
        }
    }

    @Test func sourceSpecificationsParse() throws {
        #expect(try SourceSpecification(parsing: "-") == .standardInput)
        #expect(try SourceSpecification(parsing: "synthetic:1KiB:9") == .synthetic(length: 1024, seed: 9))
        #expect(try SourceSpecification(parsing: "synthetic:10") == .synthetic(length: 10, seed: 0))
        #expect(try SourceSpecification(parsing: "a/b.bin") == .file(path: "a/b.bin"))
        #expect(throws: UsageError.self) { try SourceSpecification(parsing: "synthetic:") }
        #expect(throws: UsageError.self) { try SourceSpecification(parsing: "synthetic:1:x") }
        #expect(throws: UsageError.self) { try SourceSpecification(parsing: "synthetic:1:2:3") }
    }

    @Test func parsesMetadataArguments() throws {
        #expect(try Arguments.metadata("k=v=w") == ("k", "v=w"))
        #expect(throws: UsageError.self) { try Arguments.metadata("novalue") }
        #expect(throws: UsageError.self) { try Arguments.metadata("a b=c") }
    }

    @Test func refusesStandardInput() {
        #expect(throws: TusError.self) { try TusSource.open(.standardInput) }
    }
}
