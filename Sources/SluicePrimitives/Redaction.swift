import Foundation
import Synchronization

/// What Sluice says never carries a secret: every line that leaves the process for people
/// (stderr, error descriptions, progress) goes through `secrets(in:)`, one rule for all of them.
///
/// - A URL's password (`user:password@`) is shown as `user:***@`, however it is spelled: a
///   password holding `#`, `/`, `?`, `@` or a space still ends at the `@` before the host
///   (`u:p@ss#word@host` too, which a URL parser reads as the host `ss`).
/// - The value of a query parameter (or of an `Authorization` header's field, after `, ` or a
///   space) that signs or authorizes a request (`X-Amz-Signature`,
///   `X-Amz-Security-Token`, `Signature`, `sig`, `token`, anything named `…signature`,
///   `…token`, `…secret`, `…password`) is shown as `***`: a presigned URL in a log is an
///   upload anyone can make.
/// - Lines of credential files are never echoed (`S3ConfigFile` names the file and the line
///   number only), so they need no rule here.
/// - Every secret a request of this process carried (`register`: an SSE-C key as sent in base64
///   and as raw bytes, a secret access key, a session token, a password) is shown as `***`
///   wherever it appears: a server's or a gateway's error message that echoes the request's
///   headers carries them back. Server-provided text is redacted where it is read
///   (`S3ServerError`), so its typed fields hold no secret either.
public enum Redaction {
    /// `text` with every secret in it replaced by `***`; everything else is kept, so the line
    /// still says where and what.
    public static func secrets(in text: String) -> String {
        registeredSecrets(in: queryCredentials(in: passwords(in: text)))
    }

    /// The shortest secret `register` keeps: a shorter one would hide common words of every
    /// line (a password `abc`); such a secret is still hidden where the rules above find it.
    public static let shortestRegisteredSecret = 8

    /// The secrets registered, longest first (so one that holds another is hidden whole).
    private static let registered = Mutex<[String]>([])

    /// Registers a secret a request carries (or will): from now on it is hidden in every line.
    /// Secrets shorter than `shortestRegisteredSecret` are not kept.
    ///
    /// - Important: Thread-safe; cheap when the secret is registered already. The process keeps
    ///   what it registers for its life (a few strings).
    public static func register(_ secret: String) {
        guard secret.utf8.count >= shortestRegisteredSecret else { return }
        registered.withLock { secrets in
            guard !secrets.contains(secret) else { return }
            secrets.append(secret)
            secrets.sort { $0.utf8.count > $1.utf8.count }
        }
    }

    /// `text` with each registered secret replaced by `***`.
    package static func registeredSecrets(in text: String) -> String {
        let secrets = registered.withLock { $0 }
        guard !secrets.isEmpty else { return text }
        var text = text
        for secret in secrets where text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: "***")
        }
        return text
    }

    /// `text` with the password of every `scheme://user:password@host` in it replaced by `***`
    /// (the user name, the host and everything else are kept, so the line still says where).
    ///
    /// A URL's authority is what follows `://` up to the first `/`, `?`, `#`, space, quote or
    /// control character; its user information is what precedes the authority's last `@`,
    /// and the password is what follows the first `:` in it. When the authority holds a `:`
    /// that is no port (not digits only) and no `@`, the password went on past a delimiter
    /// (`u:p#w@host`, `u:p w@host`): it runs to the next `@` on the line.
    package static func passwords(in text: String) -> String {
        guard text.contains("://") else { return text }
        return rewriting(text) { bytes, index, output in
            guard bytes[index] == UInt8(ascii: ":"), index + 2 < bytes.count,
                bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/")
            else { return nil }
            output += bytes[index...(index + 2)]
            let start = index + 3
            var end = start
            while end < bytes.count, !endsAuthority(bytes[end]) { end += 1 }
            let authority = bytes[start..<end]
            if let at = authority.lastIndex(of: UInt8(ascii: "@")),
                let colon = authority[..<at].firstIndex(of: UInt8(ascii: ":"))
            {
                output += bytes[start...colon]
                output += Array("***".utf8)
                // `u:p@ss#word@host`: the authority ends at the `#`, but the password may go on
                // to a later `@` of the same URL (a parser takes `ss` for the host).
                if let later = laterAt(in: bytes, after: end) { return later }
                output += bytes[at..<end]
                return end
            }
            if authority.first != UInt8(ascii: "["),
                let colon = authority.firstIndex(of: UInt8(ascii: ":")), !isPort(authority[(colon + 1)...]),
                let at = bytes[end...].prefix(while: { $0 != 0x0A && $0 != 0x0D }).firstIndex(of: UInt8(ascii: "@"))
            {
                output += bytes[start...colon]
                output += Array("***".utf8)
                return at
            }
            output += authority
            return end
        }
    }

    /// `text` with the value of every signing or authorizing query parameter replaced by `***`.
    package static func queryCredentials(in text: String) -> String {
        guard text.contains("=") else { return text }
        return rewriting(text) { bytes, index, output in
            let byte = bytes[index]
            // `, Signature=…` and ` token=…` too: an `Authorization` header echoed by a server.
            guard [UInt8(ascii: "?"), UInt8(ascii: "&"), UInt8(ascii: ";"), UInt8(ascii: ","), UInt8(ascii: " ")].contains(byte) else {
                return nil
            }
            output.append(byte)
            let name = index + 1
            var nameEnd = name
            while nameEnd < bytes.count, isNameByte(bytes[nameEnd]) { nameEnd += 1 }
            guard nameEnd < bytes.count, bytes[nameEnd] == UInt8(ascii: "="), nameEnd > name,
                isSecretName(String(decoding: bytes[name..<nameEnd], as: UTF8.self))
            else { return name }
            output += bytes[name...nameEnd]
            var valueEnd = nameEnd + 1
            while valueEnd < bytes.count, !endsQueryValue(bytes[valueEnd]) { valueEnd += 1 }
            if valueEnd > nameEnd + 1 { output += Array("***".utf8) }
            return valueEnd
        }
    }

    /// `text` copied byte by byte, except where `rewrite` takes over at an index: it appends
    /// what stands for the bytes from there and returns the index after them (nil: copy the byte).
    private static func rewriting(_ text: String, _ rewrite: ([UInt8], Int, inout [UInt8]) -> Int?) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if let next = rewrite(bytes, index, &output) {
                index = next
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Query parameters whose value signs or authorizes a request.
    package static func isSecretName(_ name: String) -> Bool {
        let name = name.lowercased()
        if [
            "sig", "signature", "token", "x-amz-signature", "x-amz-security-token", "x-goog-signature",
            "access_token", "password", "secret", "sessiontoken",
        ].contains(name) {
            return true
        }
        return ["signature", "token", "secret", "password"].contains { name.hasSuffix($0) }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    private static func endsQueryValue(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "&"), UInt8(ascii: ";"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\""), UInt8(ascii: "'"),
            UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "`"), UInt8(ascii: ")"), UInt8(ascii: ","):
            return true
        default:
            return byte < 0x20 || byte == 0x7F
        }
    }

    /// The next `@` of the same URL after an authority with a password that ended at `end` on
    /// a delimiter a password may hold (`#`, `/`, `?`, a space), before the line or a quoted
    /// text ends and before another URL begins; nil when there is none. The password is taken to run to it: a path holding an
    /// `@` after such an authority is hidden too, which costs a host name, never a secret.
    private static func laterAt(in bytes: [UInt8], after end: Int) -> Int? {
        guard end < bytes.count, [UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: " ")].contains(bytes[end]) else {
            return nil
        }
        let rest = bytes[end...].prefix { byte in
            byte >= 0x20 && byte != 0x7F
                && ![UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "`")].contains(byte)
        }
        guard let at = rest.firstIndex(of: UInt8(ascii: "@")) else { return nil }
        // Another URL before it (`…?next=http://v:q@other/`) has its own user information.
        let between = Array(bytes[end..<at])
        let startsURL = between.indices.dropLast(2).contains { between[$0] == UInt8(ascii: ":") && between[$0 + 1] == UInt8(ascii: "/") && between[$0 + 2] == UInt8(ascii: "/") }
        return startsURL ? nil : at
    }

    /// Whether what follows an authority's `:` is a port: one digit or more, nothing else
    /// (`host:/path`, an empty port, counts as none: a password may start with the `/`).
    private static func isPort(_ digits: ArraySlice<UInt8>) -> Bool {
        !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
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
