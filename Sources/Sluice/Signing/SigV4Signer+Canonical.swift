extension SigV4Signer {
    /// The canonical URI: the path encoded once; normalised first only under `.normalizing`.
    func canonicalURI(_ path: String) -> String {
        switch rules {
        case .s3: return SigV4Encoding.encode(path.isEmpty ? "/" : path, keepSlash: true)
        case .normalizing: return SigV4Encoding.encode(SigV4Encoding.normalizePath(path), keepSlash: true)
        }
    }

    /// Encoded `name=value` pairs sorted by name, then value (byte order), joined by `&`.
    static func canonicalQuery(_ items: [SigV4QueryItem]) -> String {
        items.map { (SigV4Encoding.encode($0.name, keepSlash: false), SigV4Encoding.encode($0.value, keepSlash: false)) }
            .sorted { $0.0 == $1.0 ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The canonical headers block (each `name:value\n`, names lowercased and sorted, values
    /// trimmed with inner whitespace runs folded to one space, repeats joined by `,` in order)
    /// and the signed-headers list.
    static func canonicalHeaders(_ headers: [SigV4Header]) -> (block: String, signed: String) {
        var values: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased()
            guard !unsignedHeaders.contains(name) else { continue }
            values[name, default: []].append(foldWhitespace(header.value))
        }
        let names = values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let block = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return (block, names.joined(separator: ";"))
    }

    /// Trims and folds runs of spaces, tabs and line breaks into one space.
    static func foldWhitespace(_ value: String) -> String {
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in value.utf8 {
            if byte == 0x20 || (0x09...0x0D).contains(byte) {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
