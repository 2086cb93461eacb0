import Foundation
import Testing
import SluiceTestSupport

/// The library speaks in types: no string in `Sources/Sluice` names a command-line flag, and
/// each layer names nothing from the layers above it (ARCHITECTURE.md).
@Suite struct LayeringTests {
    static let root = repositoryRoot

    /// Every Swift file under `Sources/<folder>`, as (path relative to the package, lines).
    static func sources(_ folder: String) throws -> [(path: String, lines: [Substring])] {
        let base = root.appendingPathComponent("Sources/\(folder)")
        let enumerator = try #require(FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil))
        var files: [(String, [Substring])] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            files.append((String(url.path.dropFirst(root.path.count + 1)), text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// The string literals on a line of Swift code (comment lines have none): the text between
    /// unescaped double quotes, interpolations included.
    static func stringLiterals(_ line: Substring) -> [String] {
        let code = line.drop { $0 == " " }
        if code.hasPrefix("//") { return [] }
        var literals: [String] = []
        var current: String?
        var escaped = false
        var previous: Character = " "
        for character in code {
            defer { previous = character }
            guard var text = current else {
                if character == "\"" { current = "" }
                if character == "/", previous == "/" { break }  // a trailing comment
                continue
            }
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                literals.append(text)
                current = nil
                continue
            }
            text.append(character)
            current = text
        }
        return literals
    }

    /// The library's modules: `Sluice` and the floors it re-exports (every `Sources/Sluice*`
    /// but the command line and the receiver).
    static func libraryModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { $0.hasPrefix("Sluice") && $0 != "SluiceCLI" && $0 != "SluiceReceiver" }.sorted()
    }

    @Test func noLibraryStringNamesAFlag() throws {
        let flag = try Regex("--[a-z]")
        var found: [String] = []
        let modules = try Self.libraryModules()
        #expect(modules.contains("Sluice") && modules.contains("SluicePrimitives"), "\(modules)")
        for (path, lines) in try modules.flatMap({ try Self.sources($0) }) {
            for (index, line) in lines.enumerated() {
                for literal in Self.stringLiterals(line) where literal.contains(flag) {
                    found.append("\(path):\(index + 1): \"\(literal)\"")
                }
            }
        }
        #expect(found.isEmpty, "library strings that name a flag:\n\(found.joined(separator: "\n"))")
    }

    /// The check above can fail: it sees a flag in a literal, and not in comments.
    @Test func theFlagCheckSeesFlags() throws {
        #expect(Self.stringLiterals(#"throw E("use --part-size 8MiB")"#) == ["use --part-size 8MiB"])
        #expect(Self.stringLiterals(#"    /// `--part-size` in a comment"#).isEmpty)
        #expect(Self.stringLiterals(#"let a = "--\(boundary)--\r\n""#) == [#"--\(boundary)--\r\n"#])
        #expect(Self.stringLiterals(#"f("a \"q\" b") // "--not-code""#) == [#"a \"q\" b"#])
    }

    /// Each target's dependencies in `Package.swift`, by target name: the quoted names in its
    /// `dependencies: [...]` (C shims included); `kind` is `target` or `testTarget`.
    static func packageDependencies(_ manifest: String, kind: String = "target") throws -> [String: Set<String>] {
        let target = try Regex(#"\."# + kind + #"\(\s*name: "(\w+)",\s*dependencies: \[(.*?)\],\s*(?:swiftSettings|path|linkerSettings)"#)
            .dotMatchesNewlines()
        let quoted = try Regex(#""(\w+)""#)
        var result: [String: Set<String>] = [:]
        for match in manifest.matches(of: target) {
            guard let name = match.output[1].substring, let list = match.output[2].substring else { continue }
            result[String(name)] = Set(list.matches(of: quoted).compactMap { $0.output[1].substring.map(String.init) })
        }
        return result
    }

    /// ARCHITECTURE.md's table of modules: `| `Module` | `A`, `B` | `Tests/ModuleTests` |`, as
    /// (what it may import, where its tests are).
    static func architectureTable(_ text: String) throws -> [String: Row] {
        let row = try Regex(#"^\| `(\w+)` \| (.*) \| `Tests/(\w+)` \|$"#).anchorsMatchLineEndings()
        let name = try Regex(#"`(\w+)`"#)
        var result: [String: Row] = [:]
        for match in text.matches(of: row) {
            guard let module = match.output[1].substring, let list = match.output[2].substring,
                let tests = match.output[3].substring
            else { continue }
            let imports = Set(list.matches(of: name).compactMap { $0.output[1].substring.map(String.init) })
            result[String(module)] = Row(imports: imports, tests: String(tests))
        }
        return result
    }

    /// One row of ARCHITECTURE.md's table of modules.
    struct Row: Equatable {
        var imports: Set<String>
        var tests: String
    }

    /// The compiler holds the layers (each floor is a module that imports only those below it);
    /// ARCHITECTURE.md names every module and what it may import, as Package.swift does.
    @Test func architectureNamesEveryModuleAndItsImportsAsThePackageDoes() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let architecture = try String(contentsOf: Self.root.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        let modules = try Self.libraryModules() + ["SluiceCLI", "SluiceReceiver"]
        let package = try Self.packageDependencies(manifest).filter { modules.contains($0.key) }
        let table = try Self.architectureTable(architecture)
        #expect(Set(package.keys) == Set(modules), "library modules in Package.swift: \(package.keys.sorted()), in Sources: \(modules)")
        #expect(package.count >= 9, "the library is split into its floors: \(package.keys.sorted())")
        for module in modules {
            #expect(
                table[module]?.imports == package[module],
                "\(module): ARCHITECTURE.md says \(table[module]?.imports.sorted() ?? []), Package.swift \(package[module]?.sorted() ?? [])")
        }
        #expect(Set(table.keys) == Set(modules), "ARCHITECTURE.md's table names \(table.keys.sorted())")
    }

    /// The check above can fail: it reads dependencies, conditional C targets included.
    @Test func theArchitectureCheckReadsDependencies() throws {
        let manifest = """
            .target(name: "A", dependencies: ["B"], swiftSettings: strict),
            .target(
                name: "C",
                dependencies: ["A", .target(name: "CCurl", condition: .when(platforms: [.linux]))],
                swiftSettings: strict
            ),
            """
        #expect(try Self.packageDependencies(manifest) == ["A": ["B"], "C": ["A", "CCurl"]])
        #expect(
            try Self.architectureTable("| `A` | `B`, `C` | `Tests/ATests` |\n| module | may import | tests |\n")
                == ["A": Row(imports: ["B", "C"], tests: "ATests")])
        #expect(try Self.packageDependencies(#".testTarget(name: "ATests", dependencies: ["A", "S"], swiftSettings: strict),"#, kind: "testTarget") == ["ATests": ["A", "S"]])
    }

    /// Every module has a test target of its own, named for it, that depends on it and holds
    /// tests; ARCHITECTURE.md says where each module's tests are.
    @Test func everyModuleHasItsOwnTestTarget() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let architecture = try String(contentsOf: Self.root.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        let tests = try Self.packageDependencies(manifest, kind: "testTarget")
        let table = try Self.architectureTable(architecture)
        let modules = try Self.libraryModules() + ["SluiceCLI", "SluiceReceiver"]
        for module in modules {
            let target = module + "Tests"
            #expect(tests[target]?.contains(module) == true, "\(module): no test target \(target) depending on it in Package.swift")
            #expect(table[module]?.tests == target, "\(module): ARCHITECTURE.md says its tests are in \(table[module]?.tests ?? "nothing")")
            let folder = Self.root.appendingPathComponent("Tests/\(target)").path
            let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            let holdsTests = try files.filter { $0.hasSuffix(".swift") }.contains { file in
                try String(contentsOfFile: folder + "/" + file, encoding: .utf8).contains("@Test")
            }
            #expect(holdsTests, "Tests/\(target) holds no tests")
        }
        #expect(Set(tests.keys) == Set(modules.map { $0 + "Tests" }), "test targets: \(tests.keys.sorted())")
    }

    /// Each option is declared once (`Option`: its spec and what applying it does): no command
    /// dispatches on an option's spelling (`case "--…"`), which could drift from what `--help`,
    /// the man page and the completions show.
    @Test func noCommandDispatchesAnOptionBySpelling() throws {
        let dispatch = try Regex(#"case\s+"--?[A-Za-z0-9]"#)
        var found: [String] = []
        for (path, lines) in try Self.sources("SluiceCLI") {
            for (index, line) in lines.enumerated() where line.contains(dispatch) {
                found.append("\(path):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "option dispatch by spelling:\n\(found.joined(separator: "\n"))")
        #expect(#"            case "--method": method = value"#.contains(dispatch))
    }

    /// The transport-neutral part of the transport (the part scheduler, the retry policy, the
    /// request budget) names no libcurl type: retry reads typed codes (`UploadError.Code`), each
    /// transport maps its own failures to them (`CurlError.uploadErrorCode`).
    @Test func theSchedulingLayerNamesNoLibcurlType() throws {
        let curl = try Regex(#"\bCurl[A-Z][A-Za-z]*"#)
        var found: [String] = []
        for (path, lines) in try Self.sources("SluiceTransport/Scheduling") {
            for (index, line) in lines.enumerated() where !line.drop(while: { $0 == " " }).hasPrefix("//") && line.contains(curl) {
                found.append("\(path):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "libcurl types in the scheduling layer:\n\(found.joined(separator: "\n"))")
        #expect("        case .transport: return (error.underlying as? CurlError)?.isTransient ?? false".contains(curl))
    }
}
