import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SluicePrimitives

/// An AWS shared config or credentials file, parsed as botocore parses it: Python's
/// `configparser.RawConfigParser` (sections, `key = value` or `key: value`, keys lower-cased,
/// full-line `#`/`;` comments, indented continuation lines, `[DEFAULT]` inherited by every
/// section, duplicate sections or keys refused), then botocore's one level of nesting: a
/// value that starts on the next line (`s3 =` followed by indented `key = value` lines)
/// becomes a table of its own.
public struct S3ConfigFile: Sendable, Equatable {
    /// A value: a string, or a nested table (`s3 =` followed by indented lines).
    public enum Value: Sendable, Equatable {
        /// A plain `key = value`.
        case text(String)
        /// A nested table: `key =` followed by indented `name = value` lines.
        case table([String: String])

        /// The string, when the value is one.
        public var text: String? { if case .text(let value) = self { return value } else { return nil } }
        /// The table, when the value is one.
        public var table: [String: String]? { if case .table(let value) = self { return value } else { return nil } }
    }

    /// Sections by their name as written between the brackets (`default`, `profile dev`).
    public var sections: [String: [String: Value]]

    /// A file of these sections (section name to its keys).
    public init(sections: [String: [String: Value]] = [:]) {
        self.sections = sections
    }

    /// The largest configuration or credentials file read: real ones are a few KiB (botocore
    /// reads any size; a 100 MB line cost it, and Sluice before this, half a minute and 700 MB).
    public static let sizeLimit = 1 << 20

    /// Reads and parses `path`, up to `sizeLimit` bytes.
    ///
    /// - Returns: nil when there is no such regular file (a missing file, or `/dev/null`, is
    ///   no error: botocore checks `os.path.isfile`).
    /// - Throws: `S3Error` with code `.configuration` when it cannot be read (larger than
    ///   `sizeLimit` included) or parsed.
    public static func load(path: String) throws -> S3ConfigFile? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let bytes: [UInt8]?
        do { bytes = try SmallFile.read(path, limit: sizeLimit) } catch {
            throw S3Error(.configuration, "cannot read \(path): \(error)", underlying: error)
        }
        guard let bytes else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw S3Error(.configuration, "cannot read \(path): it is not UTF-8")
        }
        return try S3ConfigFile(parsing: text, path: path)
    }

    /// Parses the text of a config file.
    ///
    /// - Parameters:
    ///   - text: The file's contents.
    ///   - path: Named in errors.
    /// - Throws: `S3Error` with code `.configuration` naming the file and line.
    public init(parsing text: String, path: String = "config") throws {
        var parser = Parser(path: path)
        // Python's splitlines: \n, \r\n and \r end lines.
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            try parser.consume(String(line), number: index + 1)
        }
        try parser.finishOption()
        var sections: [String: [String: Value]] = [:]
        for name in parser.order {
            var merged: [String: [String]] = parser.defaults
            for (key, value) in parser.sections[name] ?? [:] { merged[key] = value }
            var section: [String: Value] = [:]
            for (key, lines) in merged {
                let value = Self.join(lines)
                if value.hasPrefix("\n") {
                    section[key] = .table(try Self.parseNested(value, path: path, section: name, key: key))
                } else {
                    section[key] = .text(value)
                }
            }
            sections[name] = section
        }
        self.sections = sections
    }

    /// configparser joins a value's lines with `\n` and strips trailing whitespace.
    private static func join(_ lines: [String]) -> String {
        var value = lines.joined(separator: "\n")
        while let last = value.unicodeScalars.last, last.properties.isWhitespace { value.unicodeScalars.removeLast() }
        return value
    }

    /// A credentials file's lines are never echoed: one without `=` may be a secret key or a
    /// token on its own (`Redaction`); a message names the file and the line number.
    package static let notShown = "(its text is not shown: it may hold a secret)"

    /// botocore's `_parse_nested`: every non-empty line is `key = value`.
    private static func parseNested(_ value: String, path: String, section: String, key: String) throws -> [String: String] {
        var table: [String: String] = [:]
        for line in value.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw S3Error(.configuration, "cannot parse \(path): [\(section)] \(key): a nested line has no '=' \(Self.notShown)")
            }
            table[trimmed[..<equals].trimmingCharacters(in: .whitespaces)] =
                trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return table
    }

    /// The profile `name` of a config file: `[profile NAME]`, or `[default]` for `default`.
    ///
    /// botocore reads `[profile NAME]` by splitting the header like a shell; `[default]` is
    /// the default profile, and `[profile default]`, when both exist, is taken over it.
    public func configProfile(_ name: String) -> [String: Value]? {
        var found: [String: Value]?
        for (header, values) in sections {
            guard header.hasPrefix("profile") else { continue }
            let words = Self.shellWords(header)
            if words.count == 2, words[1] == name { found = values }
        }
        if found == nil, name == "default" { return sections["default"] }
        return found
    }

    /// The `[services NAME]` section of a config file.
    public func servicesSection(_ name: String) -> [String: Value]? {
        for (header, values) in sections where header.hasPrefix("services") {
            let words = Self.shellWords(header)
            if words.count == 2, words[1] == name { return values }
        }
        return nil
    }

    /// The profile `name` of a credentials file: `[NAME]`.
    public func credentialsProfile(_ name: String) -> [String: Value]? { sections[name] }

    /// A small `shlex.split`: whitespace separates words, single and double quotes group.
    package static func shellWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character.isWhitespace {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { return [] }  // shlex raises; botocore then ignores the section
        if inWord { words.append(current) }
        return words
    }

    /// configparser's line-by-line reader (Python 3.11 `RawConfigParser._read`, strict mode).
    private struct Parser {
        package let path: String
        package var sections: [String: [String: [String]]] = [:]
        package var defaults: [String: [String]] = [:]
        package var order: [String] = []
        package var current: String?  // nil before any header; "DEFAULT" for the defaults
        package var option: String?
        package var optionIndent = Int.max

        package init(path: String) { self.path = path }

        package mutating func consume(_ line: String, number: Int) throws {
            let stripped = line.trimmingCharacters(in: .whitespaces)
            let indent = line.prefix { $0 == " " || $0 == "\t" }.count
            if stripped.hasPrefix("#") || stripped.hasPrefix(";") { return }
            if stripped.isEmpty {
                // An empty line inside a value is kept, in case an indented line follows.
                if current != nil, let option { append("", to: option) }
                return
            }
            if current != nil, let option, indent > optionIndent {
                append(stripped, to: option)
                return
            }
            try finishOption()
            if stripped.hasPrefix("["), let close = stripped.lastIndex(of: "]"), close > stripped.index(after: stripped.startIndex) {
                let name = String(stripped[stripped.index(after: stripped.startIndex)..<close])
                if name == "DEFAULT" {
                    current = name
                } else {
                    guard sections[name] == nil else {
                        throw S3Error(.configuration, "cannot parse \(path): line \(number): section [\(name)] appears twice")
                    }
                    sections[name] = [:]
                    order.append(name)
                    current = name
                }
                option = nil
                optionIndent = Int.max
                return
            }
            guard let section = current else {
                throw S3Error(.configuration, "cannot parse \(path): line \(number) comes before any [section] \(S3ConfigFile.notShown)")
            }
            guard let delimiter = stripped.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
                throw S3Error(.configuration, "cannot parse \(path): line \(number) is not 'key = value' \(S3ConfigFile.notShown)")
            }
            let key = stripped[..<delimiter].trimmingCharacters(in: .whitespaces).lowercased()
            guard !key.isEmpty else {
                throw S3Error(.configuration, "cannot parse \(path): line \(number): a value with no key")
            }
            let value = stripped[stripped.index(after: delimiter)...].trimmingCharacters(in: .whitespaces)
            let exists = section == "DEFAULT" ? defaults[key] != nil : sections[section]?[key] != nil
            guard !exists else {
                throw S3Error(.configuration, "cannot parse \(path): line \(number): '\(key)' appears twice in [\(section)]")
            }
            if section == "DEFAULT" { defaults[key] = [value] } else { sections[section]?[key] = [value] }
            option = key
            optionIndent = indent
        }

        package mutating func finishOption() throws {
            option = nil
        }

        private mutating func append(_ text: String, to key: String) {
            guard let section = current else { return }
            if section == "DEFAULT" { defaults[key, default: []].append(text) } else { sections[section]?[key, default: []].append(text) }
        }
    }
}
