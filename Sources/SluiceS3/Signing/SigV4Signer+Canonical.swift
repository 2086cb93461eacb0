extension SigV4Signer {
    /// The canonical URI: the path encoded once; normalised first only under `.normalizing`.
    package func canonicalURI(_ path: String) -> String {
        switch rules {
        case .s3: return SigV4Encoding.encode(path.isEmpty ? "/" : path, keepSlash: true)
        case .normalizing: return SigV4Encoding.encode(SigV4Encoding.normalizePath(path), keepSlash: true)
        }
    }

    /// Encoded `name=value` pairs sorted by name, then value (byte order), joined by `&`.
    package static func canonicalQuery(_ items: [SigV4QueryItem]) -> String {
        items.map { (SigV4Encoding.encode($0.name, keepSlash: false), SigV4Encoding.encode($0.value, keepSlash: false)) }
            .sorted { $0.0 == $1.0 ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The canonical headers block (each `name:value\n`, names lowercased and sorted, values
    /// trimmed with inner whitespace runs folded to one space, repeats joined by `,` in order)
    /// and the signed-headers list.
    package static func canonicalHeaders(_ headers: [SigV4Header]) -> (block: String, signed: String) {
        // A handful of headers per request: a stable sort of (name, value) pairs keeps the
        // repeats of a name in their order, without a dictionary of arrays.
        var pairs: [(name: String, value: String)] = []
        pairs.reserveCapacity(headers.count)
        var length = 0
        for header in headers {
            // Most names are lowercase already (x-amz-*): only the others are lowercased.
            let name = header.name.utf8.contains(where: { (0x41...0x5A).contains($0) }) ? header.name.lowercased() : header.name
            guard !unsignedHeaders.contains(name) else { continue }
            let value = foldWhitespace(header.value)
            pairs.append((name, value))
            length += name.utf8.count + value.utf8.count + 2
        }
        let sorted = pairs.enumerated().sorted {
            $0.element.name == $1.element.name ? $0.offset < $1.offset : $0.element.name.utf8.lexicographicallyPrecedes($1.element.name.utf8)
        }
        var block = ""
        var signed = ""
        block.reserveCapacity(length)
        signed.reserveCapacity(length)
        var previous: String?
        for (_, pair) in sorted {
            if pair.name == previous {
                block.append(",")
                block.append(pair.value)
                continue
            }
            if previous != nil {
                block.append("\n")
                signed.append(";")
            }
            block.append(pair.name)
            block.append(":")
            block.append(pair.value)
            signed.append(pair.name)
            previous = pair.name
        }
        if previous != nil { block.append("\n") }
        return (block, signed)
    }

    /// Trims and folds runs of spaces, tabs and line breaks into one space.
    package static func foldWhitespace(_ value: String) -> String {
        // Most values have nothing to fold (no blank at either end, no run, only single
        // spaces inside): kept as they are.
        var clean = true
        var afterSpace = true
        for byte in value.utf8 {
            if byte == 0x20 {
                if afterSpace { clean = false; break }
                afterSpace = true
            } else if isSpace(byte) {
                clean = false
                break
            } else {
                afterSpace = false
            }
        }
        if clean && !afterSpace { return value }
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in value.utf8 {
            if isSpace(byte) {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }
}
