/// What Sluice says never carries a password: every URL in a message, a progress line or a
/// record written for people has its `user:password@` shown as `user:***@`.
public enum Redaction {
    /// `text` with the password of every `scheme://user:password@host` in it replaced by `***`
    /// (the user name, the host and everything else are kept, so the line still says where).
    ///
    /// A URL's authority is what follows `://` up to the first `/`, `?`, `#`, space, quote or
    /// control character; its user information is what precedes the authority's last `@`,
    /// and the password is what follows the first `:` in it.
    public static func passwords(in text: String) -> String {
        guard text.contains("://") else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: ":"), index + 2 < bytes.count,
                  bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else {
                output.append(bytes[index])
                index += 1
                continue
            }
            output += bytes[index...(index + 2)]
            let start = index + 3
            var end = start
            while end < bytes.count, !endsAuthority(bytes[end]) { end += 1 }
            let authority = bytes[start..<end]
            if let at = authority.lastIndex(of: UInt8(ascii: "@")),
               let colon = authority[..<at].firstIndex(of: UInt8(ascii: ":")) {
                output += bytes[start...colon]
                output += Array("***".utf8)
                output += bytes[at..<end]
            } else {
                output += authority
            }
            index = end
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func endsAuthority(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\""),
             UInt8(ascii: "'"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "`"):
            return true
        default:
            return byte < 0x20 || byte == 0x7F
        }
    }
}
