/// Why a request could not be signed.
public struct SigV4Error: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable {
        let name: String
        /// The URL is not http(s) with a host, or its path or query is malformed.
        public static let invalidURL = Code(name: "invalidURL")
        /// A header name or value cannot be sent.
        public static let invalidHeader = Code(name: "invalidHeader")
        /// An option is out of range (expiry, chunk size, region).
        public static let invalidOption = Code(name: "invalidOption")
        /// The payload mode does not fit the request (e.g. aws-chunked with a header checksum).
        public static let invalidPayload = Code(name: "invalidPayload")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
