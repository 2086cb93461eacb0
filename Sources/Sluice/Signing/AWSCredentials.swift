/// An AWS access key pair, with the session token of temporary credentials.
public struct AWSCredentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// STS session token; sent (and signed) as `x-amz-security-token` when present.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    ///
    /// - Returns: nil when the key id or the secret is missing or empty.
    public static func fromEnvironment(_ environment: [String: String]) -> AWSCredentials? {
        guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty,
              let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else { return nil }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token)
    }

    /// The key id only: secrets never reach logs.
    public var description: String { "AWSCredentials(\(accessKeyID)\(sessionToken == nil ? "" : ", with session token"))" }
}
