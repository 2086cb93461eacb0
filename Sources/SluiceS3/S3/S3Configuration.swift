import Foundation
import SluiceRequests

/// An access key pair, with the session token of temporary credentials.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible {
    /// The access key id (`AWS_ACCESS_KEY_ID`, `aws_access_key_id`).
    public var accessKeyID: String
    /// The secret access key; never printed (`description` hides it).
    public var secretAccessKey: String
    /// The session token of temporary credentials, sent as `X-Amz-Security-Token`.
    public var sessionToken: String?
    /// Where they came from, for messages: `environment`, `~/.aws/credentials [dev]`, …
    public var origin: String

    /// Credentials from these keys; `origin` names where they came from in messages.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, origin: String = "given") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.origin = origin
    }

    /// Never prints the secret.
    public var description: String { "access key \(accessKeyID) (\(origin))" }
}

/// How a bucket goes into a request URL.
public enum S3AddressingStyle: String, Sendable, Equatable, CaseIterable {
    /// Path style for custom endpoints; virtual-hosted for AWS when the bucket name allows it.
    case auto
    /// `https://ENDPOINT/BUCKET/KEY`.
    case path
    /// `https://BUCKET.ENDPOINT/KEY`.
    case virtual
}

/// What a command line asked for explicitly; each wins over the environment and the files.
public struct S3ConfigurationOverrides: Sendable, Equatable {
    /// The profile to read (`--profile`), instead of `AWS_PROFILE` or `default`.
    public var profile: String?
    /// The region (`--region`).
    public var region: String?
    /// The endpoint URL (`--endpoint-url`).
    public var endpointURL: String?
    /// Path-style or virtual-hosted URLs (`--addressing-style`).
    public var addressingStyle: S3AddressingStyle?
    /// A PEM file of CAs to trust for https endpoints.
    public var caBundle: String?

    /// Overrides; `nil` leaves a setting to the environment and the files.
    public init(
        profile: String? = nil, region: String? = nil, endpointURL: String? = nil, addressingStyle: S3AddressingStyle? = nil,
        caBundle: String? = nil
    ) {
        self.profile = profile
        self.region = region
        self.endpointURL = endpointURL
        self.addressingStyle = addressingStyle
        self.caBundle = caBundle
    }
}

/// Where to send S3 requests and with which credentials, resolved as the AWS CLI resolves them.
///
/// Precedence, first found wins (the AWS CLI's documented order):
/// - profile: the override, `AWS_DEFAULT_PROFILE`, `AWS_PROFILE`, `default` (botocore's order).
/// - credentials: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`) —
///   skipped when a profile override is given, as botocore does —, then the profile in the
///   credentials file (`AWS_SHARED_CREDENTIALS_FILE`, `~/.aws/credentials`, `[NAME]`), then
///   the profile in the config file (`AWS_CONFIG_FILE`, `~/.aws/config`, `[profile NAME]` or
///   `[default]`). A key id without its secret is an error, not a fall-through; a secret
///   without a key id is ignored (botocore's rules).
/// - region: the override, `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, `us-east-1`.
/// - endpoint: the override, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, `s3 = endpoint_url`
///   in the profile's `[services NAME]` section, the profile's `endpoint_url`, then AWS.
///   `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true` (or `ignore_configured_endpoint_urls`) keeps
///   only the override.
/// - addressing: the override, then the profile's nested `s3 = addressing_style`, then `auto`.
/// - CA bundle: the override, `AWS_CA_BUNDLE`, the profile's `ca_bundle`, else the system's.
public struct S3Configuration: Sendable, Equatable {
    /// The keys requests are signed with; `nil` when none were found, and then a request fails with
    /// `S3Error` code `.credentials`.
    public var credentials: S3Credentials?
    /// The region requests are signed for.
    public var region: String
    /// The custom endpoint, or nil for AWS.
    public var endpoint: URL?
    /// Path-style (`endpoint/bucket/key`) or virtual-hosted (`bucket.endpoint/key`) URLs.
    public var addressingStyle: S3AddressingStyle
    /// The profile that was read.
    public var profile: String
    /// A PEM file of CAs trusted for https, or nil for the system's trust store. `S3Client`
    /// uses it unless its `S3Options.transfer.caFile` names another.
    public var caBundle: String?
    /// The profile's transfer settings (`s3 =` with `multipart_threshold`,
    /// `multipart_chunksize`, `max_concurrent_requests`, `max_bandwidth`), for `S3Options` to
    /// take (`S3Options.applying(_:)`); none for a configuration given whole.
    public var transfer = S3TransferSettings()

    /// A configuration given whole, without reading the environment or the files.
    public init(
        credentials: S3Credentials?, region: String = "us-east-1", endpoint: URL? = nil,
        addressingStyle: S3AddressingStyle = .auto, profile: String = "default", caBundle: String? = nil
    ) {
        self.credentials = credentials
        self.region = region
        self.endpoint = endpoint
        self.addressingStyle = addressingStyle
        self.profile = profile
        self.caBundle = caBundle
    }

    /// Resolves the configuration from `overrides`, `environment` and the shared files.
    ///
    /// - Parameters:
    ///   - overrides: What the command line said.
    ///   - environment: Usually `ProcessInfo.processInfo.environment`.
    ///   - home: Where `~` points; `HOME` by default.
    /// - Throws: `S3Error` with code `.configuration` (a file that does not parse, a named
    ///   profile found nowhere, a bad endpoint) or `.credentials` (half a key pair).
    public static func resolve(
        _ overrides: S3ConfigurationOverrides = S3ConfigurationOverrides(),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        home: String? = nil
    ) throws -> S3Configuration {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let home = home ?? environment["HOME"] ?? NSHomeDirectory()
        func expand(_ path: String) -> String {
            if path == "~" { return home }
            if path.hasPrefix("~/") { return home + path.dropFirst() }
            return path
        }
        let configPath = expand(nonEmpty("AWS_CONFIG_FILE") ?? "~/.aws/config")
        let credentialsPath = expand(nonEmpty("AWS_SHARED_CREDENTIALS_FILE") ?? "~/.aws/credentials")
        let configFile = try S3ConfigFile.load(path: configPath)
        let credentialsFile = try S3ConfigFile.load(path: credentialsPath)

        let explicitProfile = overrides.profile
        let profileName = explicitProfile ?? nonEmpty("AWS_DEFAULT_PROFILE") ?? nonEmpty("AWS_PROFILE") ?? "default"
        let configProfile = configFile?.configProfile(profileName)
        let credentialsProfile = credentialsFile?.credentialsProfile(profileName)
        if profileName != "default", configProfile == nil, credentialsProfile == nil {
            throw S3Error(.configuration, "the profile '\(profileName)' is in neither \(configPath) nor \(credentialsPath)")
        }
        let profile = configProfile ?? [:]

        // Credentials.
        var credentials: S3Credentials?
        if explicitProfile == nil {
            credentials = try Self.credentials(
                id: nonEmpty("AWS_ACCESS_KEY_ID"), secret: nonEmpty("AWS_SECRET_ACCESS_KEY"),
                token: nonEmpty("AWS_SECURITY_TOKEN") ?? nonEmpty("AWS_SESSION_TOKEN"),
                origin: "environment", idName: "AWS_ACCESS_KEY_ID", secretName: "AWS_SECRET_ACCESS_KEY")
        }
        if credentials == nil, let section = credentialsProfile {
            credentials = try Self.credentials(section, origin: "\(credentialsPath) [\(profileName)]")
        }
        if credentials == nil, let section = configProfile {
            let header = profileName == "default" ? "default" : "profile \(profileName)"
            credentials = try Self.credentials(section, origin: "\(configPath) [\(header)]")
        }

        // Region.
        let region =
            overrides.region ?? nonEmpty("AWS_REGION") ?? nonEmpty("AWS_DEFAULT_REGION")
            ?? profile["region"]?.text.flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"

        // Endpoint.
        var endpointText = overrides.endpointURL
        let ignoreConfigured =
            (nonEmpty("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") ?? profile["ignore_configured_endpoint_urls"]?.text)?
            .lowercased() == "true"
        if endpointText == nil, !ignoreConfigured {
            endpointText = nonEmpty("AWS_ENDPOINT_URL_S3") ?? nonEmpty("AWS_ENDPOINT_URL")
            if endpointText == nil, let servicesName = profile["services"]?.text {
                guard let services = configFile?.servicesSection(servicesName) else {
                    throw S3Error(.configuration, "the profile '\(profileName)' names services '\(servicesName)', which \(configPath) does not have")
                }
                endpointText = services["s3"]?.table?["endpoint_url"]
            }
            if endpointText == nil { endpointText = profile["endpoint_url"]?.text }
        }
        let endpoint = try endpointText.map(Self.parseEndpoint)

        // Addressing.
        var style = overrides.addressingStyle ?? .auto
        if overrides.addressingStyle == nil, let text = profile["s3"]?.table?["addressing_style"] {
            guard let parsed = S3AddressingStyle(rawValue: text) else {
                throw S3Error(.configuration, "addressing_style '\(text)' in \(configPath) is not auto, path or virtual")
            }
            style = parsed
        }
        let caBundle = (overrides.caBundle ?? nonEmpty("AWS_CA_BUNDLE") ?? profile["ca_bundle"]?.text.flatMap { $0.isEmpty ? nil : $0 })
            .map(expand)
        var configuration = S3Configuration(
            credentials: credentials, region: region, endpoint: endpoint, addressingStyle: style, profile: profileName,
            caBundle: caBundle)
        if let table = profile["s3"]?.table { configuration.transfer = try S3TransferSettings(table, path: configPath) }
        return configuration
    }

    private static func credentials(_ section: [String: S3ConfigFile.Value], origin: String) throws -> S3Credentials? {
        try credentials(
            id: section["aws_access_key_id"]?.text, secret: section["aws_secret_access_key"]?.text,
            token: section["aws_security_token"]?.text ?? section["aws_session_token"]?.text,
            origin: origin, idName: "aws_access_key_id", secretName: "aws_secret_access_key")
    }

    private static func credentials(
        id: String?, secret: String?, token: String?, origin: String, idName: String, secretName: String
    ) throws -> S3Credentials? {
        guard let id, !id.isEmpty else { return nil }
        guard let secret, !secret.isEmpty else {
            throw S3Error(.credentials, "\(origin) has \(idName) but no \(secretName)")
        }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token.flatMap { $0.isEmpty ? nil : $0 }, origin: origin)
    }

    /// Accepts `http(s)://host[:port][/prefix]`; a bare `host:port` is refused, as the AWS CLI does,
    /// and so are a port outside 1 ... 65535 and `user:password@` (S3 signs with AWS credentials;
    /// a password in the URL would only be sent along, or printed in a presigned URL).
    package static func parseEndpoint(_ text: String) throws -> URL {
        guard let url = URL(string: text), url.isHTTPWithHost, url.query == nil, url.fragment == nil else {
            throw S3Error(.configuration, "invalid endpoint URL '\(text)': expected http:// or https:// with a host")
        }
        if let port = url.port, !(1...65535).contains(port) {
            throw S3Error(.configuration, "invalid endpoint URL '\(text)': port \(port) is not from 1 to 65535")
        }
        guard url.user == nil, url.password == nil else {
            throw S3Error(.configuration, "invalid endpoint URL: it holds a user name or password; S3 requests are signed with the AWS credentials instead")
        }
        return url
    }

    /// Whether requests go to AWS itself (no custom endpoint).
    public var isAWS: Bool { endpoint == nil }

    /// The URL of `location` (an object, or the bucket when the key is empty), with the key
    /// percent-encoded once and never normalised.
    ///
    /// - Parameters:
    ///   - location: The bucket and key.
    ///   - query: Appended as is (already encoded): `uploads`, `partNumber=1&uploadId=…`.
    public func url(for location: S3Location, query: String? = nil) -> URL {
        let (endpoint, path) = target(for: location)
        var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)!
        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        components.percentEncodedPath = prefix + S3Location.encodePath(path)
        components.percentEncodedQuery = query
        return components.url!
    }
}
