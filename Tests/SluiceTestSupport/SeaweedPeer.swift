import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sluice
import SluiceReceiver
#if canImport(Glibc)
import Glibc
#endif

/// The SeaweedFS that scripts/test.sh starts (`sluice_start_weed`): `SLUICE_S3_URL`,
/// `SLUICE_S3_ACCESS_KEY`, `SLUICE_S3_SECRET_KEY`, `SLUICE_S3_BUCKET`.
package struct SeaweedPeer {
    package init(endpoint: URL, credentials: S3Credentials, bucket: String, region: String) {
        self.endpoint = endpoint; self.credentials = credentials; self.bucket = bucket; self.region = region
    }
    package let endpoint: URL
    package let credentials: S3Credentials
    package let bucket: String
    package let region: String

    package static let current: SeaweedPeer? = {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["SLUICE_S3_URL"].flatMap(URL.init(string:)), let key = environment["SLUICE_S3_ACCESS_KEY"],
            let secret = environment["SLUICE_S3_SECRET_KEY"], let bucket = environment["SLUICE_S3_BUCKET"]
        else { return nil }
        return SeaweedPeer(
            endpoint: url, credentials: S3Credentials(accessKeyID: key, secretAccessKey: secret), bucket: bucket,
            region: environment["SLUICE_S3_REGION"] ?? "us-east-1")
    }()

    package var signer: SigV4Signer { SigV4Signer(credentials: credentials, region: region) }
    /// This server as an `S3Client` reaches it.
    package var configuration: S3Configuration { S3Configuration(credentials: credentials, region: region, endpoint: endpoint) }

    /// An `S3Client` of this server with a fresh state directory named for `state`, and the
    /// options `configure` sets.
    package func client(
        state: String, transport: any UploadTransport = CurlTransport(), _ configure: (inout S3Options) -> Void = { _ in }
    ) throws -> S3Client {
        var options = S3Options()
        options.stateDirectory = try s3TemporaryDirectory(state)
        configure(&options)
        return S3Client(configuration: configuration, options: options, transport: transport)
    }

    /// A fresh key in this bucket: `prefix`, eight random characters, `suffix`.
    package func location(_ prefix: String, suffix: String = " é.bin") throws -> S3Location {
        try S3Location(bucket: bucket, key: "\(prefix)\(UUID().uuidString.prefix(8))\(suffix)")
    }

    package func request(_ method: String, key: String) throws -> SigV4Request {
        try SigV4Request(method: method, endpoint: endpoint, path: "/\(bucket)/\(key)")
    }

    /// What is stored under `key`, read back by boto3 (`Tests/Peers/s3_object.py`).
    package func stored(key: String) async throws -> (status: Int, sha256: String?, size: Int64?) {
        let answer = try await readBack(["key": key])
        return ((answer["status"] as? Int) ?? -1, answer["sha256"] as? String, (answer["size"] as? NSNumber)?.int64Value)
    }

    /// The SHA-256 of every object under `prefix`, by key below it, read back by boto3 in one process.
    package func stored(under prefix: String) async throws -> [String: String] {
        let answer = try await readBack(["prefix": prefix])
        return answer["objects"] as? [String: String] ?? [:]
    }

    /// `Tests/Peers/s3_object.py`'s answer for this bucket and `what` (a key or a prefix).
    private func readBack(_ what: [String: String]) async throws -> [String: Any] {
        let input: [String: String] = [
            "endpoint": endpoint.absoluteString, "region": region, "access_key": credentials.accessKeyID,
            "secret_key": credentials.secretAccessKey, "bucket": bucket,
        ]
        return try await runPythonPeer("s3_object.py", input: input.merging(what) { _, new in new }) as? [String: Any] ?? [:]
    }

    /// The object's bytes through a presigned GET (for objects stored without a Content-Encoding).
    package func presignedGet(key: String) async throws -> (status: Int, body: Data) {
        let url = try signer.presign(try request("GET", key: key), expires: 300).url
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? -1, data)
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the suite only where scripts/test.sh started SeaweedFS (`SeaweedPeer.current`).
    package static var seaweed: Self {
        .enabled(if: SeaweedPeer.current != nil, "needs SLUICE_S3_URL (scripts/test.sh starts SeaweedFS)")
    }
}
