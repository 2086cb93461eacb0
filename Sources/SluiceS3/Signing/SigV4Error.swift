/// Why a request could not be signed.
public struct SigV4Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of signing failure a `SigV4Error` is: compare it with the static values.
    public struct Code: Sendable, Hashable {
        package let name: String
        /// The URL is not http(s) with a host, or its path or query is malformed.
        public static let invalidURL = Code(name: "invalidURL")
        /// A header name or value cannot be sent.
        public static let invalidHeader = Code(name: "invalidHeader")
        /// An option is out of range (expiry, chunk size, region).
        public static let invalidOption = Code(name: "invalidOption")
        /// The payload mode does not fit the request (e.g. aws-chunked with a header checksum).
        public static let invalidPayload = Code(name: "invalidPayload")
    }

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, in one line.
    public let message: String

    /// An error of kind `code` saying `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
