import Sluice
/// curl's `-F` / `--form` and `--form-string` syntax, turned into `MultipartPart`s.
///
/// | argument | part |
/// |---|---|
/// | `name=value` | text field |
/// | `name="a;b"` | text field `a;b` (quotes protect `;`; `\"` and `\\` inside them) |
/// | `name=value;type=text/plain; charset=utf-8` | text field with a content type |
/// | `name=value;filename=a.txt` | in-memory value sent as a file |
/// | `name=@path` | file part, filename = last path component, type guessed as curl does |
/// | `name=@path;type=TYPE;filename=NAME` | file part with explicit type and filename |
/// | `name=@"a;b,c.txt"` | a path holding `;` or `,` |
/// | `name=<path` | text field whose value is the file's content (no filename) |
/// | `...;headers="X-Name: value"` | extra part header (repeatable) |
///
/// Where curl would only warn, Sluice refuses with one clear message instead of sending
/// something else: unknown `;key=` parameters, text after a closing quote, `filename=`
/// with `<`. Not supported (refused): several files in one part (`@a,b`), stdin
/// (`@-`, `<-`: a body needs its length before it starts), `type=multipart/mixed`
/// subparts (`=(` ... `=)`), `encoder=`, `headers=@file`.
/// Unlike curl, an empty name is sent as `name=""` (RFC 7578 requires the parameter)
/// rather than left out.
public enum FormArgument {
    /// Parses one `-F` argument.
    ///
    /// - Parameter argument: `NAME=VALUE`, `NAME=@PATH[;params]` or `NAME=<PATH[;params]`.
    /// - Returns: The part; file paths are opened later, by `MultipartBody`.
    /// - Throws: `MultipartError.invalidFormArgument` naming the problem, or the part's
    ///   own validation errors (NUL in a name, a malformed content type).
    public static func parse(_ argument: String) throws -> MultipartPart {
        let (name, rest) = try split(argument)
        var scanner = FormScanner(rest, argument: argument)
        switch rest.first {
        case UInt8(ascii: "("), UInt8(ascii: ")"):
            throw scanner.failure("multipart/mixed subparts ('=(' ... '=)') are not supported")
        case UInt8(ascii: "@"):
            scanner.position += 1
            let fields = try scanner.fields(endCharacter: UInt8(ascii: ","), allowsFilename: true)
            if fields.separator == UInt8(ascii: ",") {
                throw scanner.failure("several files in one part ('@a,b') are not supported; use one --form per file, or quote a path holding ','")
            }
            let path = try checkedPath(fields.data, scanner: scanner)
            return try MultipartPart.file(
                name, path: path, filename: fields.filename, contentType: fields.type,
                headers: try headers(fields.headers, scanner: scanner))
        case UInt8(ascii: "<"):
            scanner.position += 1
            let fields = try scanner.fields(endCharacter: nil, allowsFilename: false)
            let path = try checkedPath(fields.data, scanner: scanner)
            return try MultipartPart(
                name: name, content: .file(path: path), contentType: fields.type,
                headers: try headers(fields.headers, scanner: scanner))
        default:
            let fields = try scanner.fields(endCharacter: nil, allowsFilename: true)
            let type = fields.type ?? fields.filename.flatMap(MediaTypeSyntax.guessed(forFilename:))
            return try MultipartPart(
                name: name, content: .bytes(Array(fields.data.utf8)), filename: fields.filename,
                contentType: type, headers: try headers(fields.headers, scanner: scanner))
        }
    }

    /// Parses one `--form-string` argument: everything after the first `=` is the value,
    /// byte for byte (`@`, `<`, `;` and quotes have no meaning).
    ///
    /// - Parameter argument: `NAME=VALUE`.
    /// - Returns: A text field part.
    /// - Throws: `MultipartError.invalidFormArgument` when there is no `=`;
    ///   `MultipartError.nulInName` for a NUL in the name.
    public static func parseLiteral(_ argument: String) throws -> MultipartPart {
        let (name, rest) = try split(argument)
        return try MultipartPart(name: name, content: .bytes(Array(rest)))
    }

    private static func split(_ argument: String) throws -> (name: String, rest: ArraySlice<UInt8>) {
        let bytes = Array(argument.utf8)
        guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else {
            throw MultipartError.invalidFormArgument(argument, reason: "no '=' (expected NAME=VALUE, NAME=@FILE or NAME=<FILE)")
        }
        return (String(decoding: bytes[..<equals], as: UTF8.self), bytes[(equals + 1)...])
    }

    private static func checkedPath(_ path: String, scanner: FormScanner) throws -> String {
        if path.isEmpty { throw scanner.failure("no file name after '@' or '<'") }
        if path == "-" {
            throw scanner.failure("reading a part from stdin is not supported: a multipart body needs every part's length before it starts")
        }
        return path
    }

    private static func headers(_ lines: [String], scanner: FormScanner) throws -> [HTTPHeader] {
        try lines.map { line in
            do {
                return try Arguments.header(line)
            } catch {
                throw scanner.failure("headers=\(line.debugDescription) is not a 'Name: value' header")
            }
        }
    }
}

/// A cursor over the part of a `-F` argument after `NAME=`, following curl's
/// `get_param_word` and `get_param_part` (src/tool_formparse.c) for quoting and parameters.
struct FormScanner {
    let bytes: ArraySlice<UInt8>
    let argument: String
    var position: Int

    init(_ bytes: ArraySlice<UInt8>, argument: String) {
        self.bytes = bytes
        self.argument = argument
        self.position = bytes.startIndex
    }

    struct Fields {
        var data = ""
        var type: String?
        var filename: String?
        var headers: [String] = []
        var separator: UInt8?
    }

    func failure(_ reason: String) -> MultipartError {
        .invalidFormArgument(argument, reason: reason)
    }

    private var current: UInt8? { position < bytes.endIndex ? bytes[position] : nil }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private mutating func skipSpaces() {
        while let byte = current, FormScanner.isSpace(byte) { position += 1 }
    }

    private func hasPrefix(_ prefix: String) -> Bool {
        let wanted = Array(prefix.utf8)
        guard bytes.endIndex - position >= wanted.count else { return false }
        return zip(bytes[position...], wanted).allSatisfy { a, b in
            (0x41...0x5A).contains(a) ? a | 0x20 == b : a == b
        }
    }

    /// One word: a `"quoted string"` (with `\"` and `\\` undone) or everything up to `;`,
    /// `endCharacter` or the end. Unquoted words lose their trailing spaces.
    private mutating func word(endCharacter: UInt8?) throws -> String {
        let begin = position
        if current == UInt8(ascii: "\"") {
            var index = position + 1
            var value: [UInt8] = []
            while index < bytes.endIndex {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\"), index + 1 < bytes.endIndex,
                    bytes[index + 1] == UInt8(ascii: "\\") || bytes[index + 1] == UInt8(ascii: "\"")
                {
                    value.append(bytes[index + 1])
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") {
                    position = index + 1
                    while let next = current, next != UInt8(ascii: ";"), next != endCharacter {
                        guard FormScanner.isSpace(next) else {
                            throw failure("text after a closing quote; put ';' between parameters")
                        }
                        position += 1
                    }
                    return String(decoding: value, as: UTF8.self)
                }
                value.append(byte)
                index += 1
            }
            // No closing quote: curl reads the word as unquoted, quote included.
            position = begin
        }
        while let byte = current, byte != UInt8(ascii: ";"), byte != endCharacter { position += 1 }
        var end = position
        while end > begin, FormScanner.isSpace(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[begin..<end], as: UTF8.self)
    }

    /// The value (or path) and its `;type=`, `;filename=`, `;headers=` parameters.
    ///
    /// As in curl, `;` segments after `type=` that are not another known parameter are
    /// the content type's own parameters (`type=text/plain;charset=utf-8`).
    mutating func fields(endCharacter: UInt8?, allowsFilename: Bool) throws -> Fields {
        var fields = Fields()
        skipSpaces()
        fields.data = try word(endCharacter: endCharacter)
        var typeRange: Range<Int>?
        var typeOpen = false
        func closeType() {
            if let range = typeRange, typeOpen {
                fields.type = String(decoding: bytes[range], as: UTF8.self)
            }
            typeOpen = false
        }
        while current == UInt8(ascii: ";") {
            position += 1
            skipSpaces()
            if !typeOpen && hasPrefix("type=") {
                if fields.type != nil { throw failure("type= given twice") }
                position += 5
                skipSpaces()
                let start = position
                // curl: "%127[^/ ]/%127[^;, \n]"
                let major = position
                while let byte = current, byte != UInt8(ascii: "/"), byte != 0x20 { position += 1 }
                guard position > major, current == UInt8(ascii: "/") else {
                    throw failure("type= needs TYPE/SUBTYPE, such as text/plain")
                }
                position += 1
                let minor = position
                while let byte = current, ![UInt8(ascii: ";"), UInt8(ascii: ","), 0x20, 0x0A].contains(byte) { position += 1 }
                guard position > minor else { throw failure("type= needs TYPE/SUBTYPE, such as text/plain") }
                var end = position
                while let byte = current, byte != UInt8(ascii: ";"), byte != endCharacter {
                    if !FormScanner.isSpace(byte) { end = position + 1 }
                    position += 1
                }
                typeRange = start..<end
                typeOpen = true
            } else if hasPrefix("filename=") {
                guard allowsFilename else { throw failure("filename= does not apply to a value read with '<'") }
                if fields.filename != nil { throw failure("filename= given twice") }
                closeType()
                position += 9
                skipSpaces()
                fields.filename = try word(endCharacter: endCharacter)
            } else if hasPrefix("headers=") {
                closeType()
                position += 8
                skipSpaces()
                if current == UInt8(ascii: "@") || current == UInt8(ascii: "<") {
                    throw failure("headers= from a file is not supported; give each header inline")
                }
                fields.headers.append(try word(endCharacter: endCharacter))
            } else if hasPrefix("encoder=") {
                throw failure("encoder= is not supported")
            } else if typeOpen, let range = typeRange {
                // A parameter of the content type.
                var end = position
                while let byte = current, byte != UInt8(ascii: ";"), byte != endCharacter {
                    if !FormScanner.isSpace(byte) { end = position + 1 }
                    position += 1
                }
                typeRange = range.lowerBound..<end
            } else {
                let unknown = try word(endCharacter: endCharacter)
                if !unknown.isEmpty {
                    throw failure("unknown parameter \(unknown.debugDescription) (known: type=, filename=, headers=); quote a value holding ';', or use --form-string")
                }
            }
        }
        closeType()
        fields.separator = current
        return fields
    }
}
