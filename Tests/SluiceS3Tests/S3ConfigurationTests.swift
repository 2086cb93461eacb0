import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Credentials, region, endpoint and addressing as the AWS CLI reads them, checked by hand
/// and against botocore's own loader on the same files and environments.
struct S3ConfigurationTests {
    /// Writes `config` and `credentials` into a fresh directory; returns the base environment.
    func files(config: String?, credentials: String?) throws -> [String: String] {
        let directory = try s3TemporaryDirectory("s3-config")
        var environment = ["HOME": directory]
        if let config {
            try config.write(toFile: directory + "/config", atomically: true, encoding: .utf8)
        }
        if let credentials {
            try credentials.write(toFile: directory + "/credentials", atomically: true, encoding: .utf8)
        }
        environment["AWS_CONFIG_FILE"] = directory + "/config"
        environment["AWS_SHARED_CREDENTIALS_FILE"] = directory + "/credentials"
        return environment
    }

    let config = """
        [default]
        region = us-west-2
        aws_access_key_id = CONFIGDEFAULT
        aws_secret_access_key = configdefaultsecret

        [profile dev]
        region = eu-central-1
        endpoint_url = http://127.0.0.1:9000
        s3 =
          addressing_style = virtual
          signature_version = s3v4

        [profile svc]
        services = local
        endpoint_url = http://127.0.0.1:1111

        [services local]
        s3 =
          endpoint_url = http://127.0.0.1:2222

        [profile onlyconfig]
        aws_access_key_id = ONLYCONFIG
        aws_secret_access_key = onlyconfigsecret
        aws_session_token = onlyconfigtoken

        [profile half]
        aws_access_key_id = HALF
        """

    let credentials = """
        [default]
        aws_access_key_id = CREDDEFAULT
        aws_secret_access_key = creddefaultsecret

        [dev]
        aws_access_key_id=DEVKEY
        aws_secret_access_key : dev/secret+with=odd
        aws_session_token = devtoken
        """

    @Test func environmentWinsOverFilesUnlessAProfileIsGiven() throws {
        var environment = try files(config: config, credentials: credentials)
        environment["AWS_ACCESS_KEY_ID"] = "ENVKEY"
        environment["AWS_SECRET_ACCESS_KEY"] = "envsecret"
        environment["AWS_SESSION_TOKEN"] = "envtoken"
        let fromEnvironment = try S3Configuration.resolve(environment: environment)
        #expect(fromEnvironment.credentials == S3Credentials(accessKeyID: "ENVKEY", secretAccessKey: "envsecret", sessionToken: "envtoken", origin: "environment"))
        #expect(fromEnvironment.region == "us-west-2")
        #expect(fromEnvironment.endpoint == nil)
        // AWS_PROFILE keeps the environment's keys; --profile drops them (botocore).
        environment["AWS_PROFILE"] = "dev"
        #expect(try S3Configuration.resolve(environment: environment).credentials?.accessKeyID == "ENVKEY")
        let explicit = try S3Configuration.resolve(S3ConfigurationOverrides(profile: "dev"), environment: environment)
        #expect(explicit.credentials?.accessKeyID == "DEVKEY")
        #expect(explicit.credentials?.secretAccessKey == "dev/secret+with=odd")
        #expect(explicit.credentials?.sessionToken == "devtoken")
    }

    @Test func profilesReadBothFiles() throws {
        let environment = try files(config: config, credentials: credentials)
        let fallback = try S3Configuration.resolve(environment: environment)
        #expect(fallback.credentials?.accessKeyID == "CREDDEFAULT", "the credentials file wins over the config file")
        let dev = try S3Configuration.resolve(S3ConfigurationOverrides(profile: "dev"), environment: environment)
        #expect(dev.region == "eu-central-1")
        #expect(dev.endpoint?.absoluteString == "http://127.0.0.1:9000")
        #expect(dev.addressingStyle == .virtual)
        let only = try S3Configuration.resolve(S3ConfigurationOverrides(profile: "onlyconfig"), environment: environment)
        #expect(only.credentials?.accessKeyID == "ONLYCONFIG")
        #expect(only.credentials?.sessionToken == "onlyconfigtoken")
        #expect(throws: S3Error.self) { try S3Configuration.resolve(S3ConfigurationOverrides(profile: "half"), environment: environment) }
        #expect(throws: S3Error.self) { try S3Configuration.resolve(S3ConfigurationOverrides(profile: "nowhere"), environment: environment) }
    }

    @Test func precedenceOfRegionEndpointAndAddressing() throws {
        var environment = try files(config: config, credentials: credentials)
        environment["AWS_PROFILE"] = "dev"
        environment["AWS_DEFAULT_REGION"] = "ap-south-1"
        #expect(try S3Configuration.resolve(environment: environment).region == "ap-south-1")
        environment["AWS_REGION"] = "sa-east-1"
        #expect(try S3Configuration.resolve(environment: environment).region == "sa-east-1")
        #expect(try S3Configuration.resolve(S3ConfigurationOverrides(region: "af-south-1"), environment: environment).region == "af-south-1")

        environment["AWS_ENDPOINT_URL"] = "http://127.0.0.1:3333"
        #expect(try S3Configuration.resolve(environment: environment).endpoint?.absoluteString == "http://127.0.0.1:3333")
        environment["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:4444"
        #expect(try S3Configuration.resolve(environment: environment).endpoint?.absoluteString == "http://127.0.0.1:4444")
        #expect(try S3Configuration.resolve(S3ConfigurationOverrides(endpointURL: "https://h:5"), environment: environment).endpoint?.absoluteString == "https://h:5")
        environment["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "true"
        #expect(try S3Configuration.resolve(environment: environment).endpoint == nil)

        #expect(try S3Configuration.resolve(S3ConfigurationOverrides(addressingStyle: .path), environment: environment).addressingStyle == .path)
        let services = try S3Configuration.resolve(S3ConfigurationOverrides(profile: "svc"), environment: files(config: config, credentials: nil))
        #expect(services.endpoint?.absoluteString == "http://127.0.0.1:2222", "the services section wins over the profile's endpoint_url")
        #expect(throws: S3Error.self) { try S3Configuration.resolve(S3ConfigurationOverrides(endpointURL: "127.0.0.1:9000"), environment: environment) }
    }

    @Test func missingFilesAreNoError() throws {
        let resolved = try S3Configuration.resolve(environment: ["HOME": "/nonexistent-sluice-home"])
        #expect(resolved.credentials == nil)
        #expect(resolved.region == "us-east-1")
        #expect(resolved.profile == "default")
    }

    // MARK: - INI parsing against botocore (configparser)

    static let iniCases: [String] = [
        "[default]\nregion = eu-west-1\n",
        "[default]\nRegion: eu-west-1\n  continued line\n\n  after blank\nx=1\n",
        "# comment\n; other\n[profile a b]\nk = v # not a comment\n",
        "[profile  \"spaced name\"]\nregion=us-east-2\n",
        "[profile dev]\ns3 =\n  addressing_style = path\n  max_concurrent_requests = 20\nregion = x\n",
        "[profile dev]\ns3 =\n\n  addressing_style = path\n\n",
        "[DEFAULT]\nregion = inherited\n[profile a]\nx = 1\n[profile b]\nregion = own\n",
        "[default]\nkey = value with = equals : colon\nempty =\n",
        "[default]\r\nregion = crlf\r\n",
        "[default]\nregion = a\n[default]\nregion = b\n",
        "[default]\nregion = a\nregion = b\n",
        "region = before any section\n",
        "[default]\nno delimiter here\n",
        "[default]\ns3 =\n  no equals in nested\n",
        "[default]\n = no key\n",
        "[a]x]\nk = v\n",
        "[profile x] trailing\nk = v\n",
        "[default]\n\tindented = tab\n",
        "  [default]\nk=v\n",
        "[default]\nk = v\n  [notasection]\n",
        "[default]\nK = upper\nk2 = ünïcode välue\n",
    ]

    @Test func iniParsesAsBotocoreDoes() throws {
        let directory = try s3TemporaryDirectory("s3-ini")
        var paths: [String] = []
        var generator = SeededGenerator(seed: testSeed("S3ConfigurationTests.ini"))
        var texts = Self.iniCases
        for _ in 0..<60 { texts.append(Self.randomINI(using: &generator)) }
        for (index, text) in texts.enumerated() {
            let path = directory + "/case\(index).ini"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        let answers = try s3BotocorePeer(["ini": paths])
        #expect(answers.count == paths.count)
        for (index, answer) in answers.enumerated() {
            let ours = Result { try S3ConfigFile(parsing: texts[index]) }
            let theirsOK = answer["ok"] as? Bool ?? false
            switch ours {
            case .failure(let error):
                #expect(!theirsOK, "case \(index) \(texts[index].debugDescription): we refused (\(error)), botocore parsed \(answer)")
            case .success(let file):
                guard theirsOK, let sections = answer["sections"] as? [String: [String: Any]] else {
                    Issue.record("case \(index) \(texts[index].debugDescription): we parsed, botocore refused: \(answer["error"] ?? "")")
                    continue
                }
                #expect(Self.normalise(file) == Self.normalise(sections), "case \(index) \(texts[index].debugDescription)")
            }
        }
    }

    static func normalise(_ file: S3ConfigFile) -> [String: [String: String]] {
        file.sections.mapValues { section in
            section.mapValues { value in
                switch value {
                case .text(let text): return text
                case .table(let table): return "{" + table.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
                }
            }
        }
    }

    static func normalise(_ sections: [String: [String: Any]]) -> [String: [String: String]] {
        sections.mapValues { section in
            section.mapValues { value in
                if let table = value as? [String: String] {
                    return "{" + table.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
                }
                return value as? String ?? "\(value)"
            }
        }
    }

    /// A random config file from pieces that stress the grammar.
    static func randomINI(using generator: inout SeededGenerator) -> String {
        let headers = ["[default]", "[profile p1]", "[profile  p2 ]", "[DEFAULT]", "[services s]", "[p3]", "[profile \"q r\"]"]
        let keys = ["region", "Region", "aws_access_key_id", "s3", "endpoint_url", "x", "K_2"]
        let values = ["", "v", "a b", "x=y", "http://h:1/p", "ü", " spaced "]
        var lines: [String] = []
        var used = Set<String>()
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            var header = headers.randomElement(using: &generator)!
            if used.contains(header) { header = "[profile n\(used.count)]" }
            used.insert(header)
            lines.append(header)
            var keysUsed = Set<String>()
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                let key = keys.randomElement(using: &generator)!
                guard keysUsed.insert(key.lowercased()).inserted else { continue }
                let delimiter = Bool.random(using: &generator) ? " = " : ":"
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    lines.append("\(key)\(delimiter)")
                    for _ in 0..<Int.random(in: 1...3, using: &generator) {
                        lines.append("  \(keys.randomElement(using: &generator)!.lowercased()) = \(values.randomElement(using: &generator)!)")
                    }
                case 1:
                    lines.append("\(key)\(delimiter)\(values.randomElement(using: &generator)!)")
                    lines.append("    continued")
                case 2: lines.append("# \(key)")
                case 3: lines.append("")
                default: lines.append("\(key)\(delimiter)\(values.randomElement(using: &generator)!)")
                }
            }
        }
        return lines.joined(separator: "\n") + (Bool.random(using: &generator) ? "\n" : "")
    }

    // MARK: - Resolution against botocore

    @Test func resolvesAsBotocoreDoes() throws {
        let base = try files(config: config, credentials: credentials)
        var cases: [([String: String], String?)] = []
        cases.append((base, nil))
        cases.append((base.merging(["AWS_PROFILE": "dev"]) { $1 }, nil))
        cases.append((base, "dev"))
        cases.append((base, "onlyconfig"))
        cases.append((base, "svc"))
        cases.append((base.merging(["AWS_ACCESS_KEY_ID": "E", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T"]) { $1 }, nil))
        cases.append((base.merging(["AWS_ACCESS_KEY_ID": "E", "AWS_SECRET_ACCESS_KEY": "S"]) { $1 }, "dev"))
        cases.append((base.merging(["AWS_ACCESS_KEY_ID": "E"]) { $1 }, nil))
        cases.append((base.merging(["AWS_SECRET_ACCESS_KEY": "S"]) { $1 }, nil))
        cases.append((base.merging(["AWS_DEFAULT_PROFILE": "dev", "AWS_PROFILE": "onlyconfig"]) { $1 }, nil))
        cases.append((base.merging(["AWS_DEFAULT_REGION": "ap-south-1", "AWS_PROFILE": "dev"]) { $1 }, nil))
        cases.append((base.merging(["AWS_ENDPOINT_URL": "http://127.0.0.1:3333", "AWS_PROFILE": "dev"]) { $1 }, nil))
        cases.append((base.merging(["AWS_ENDPOINT_URL": "http://127.0.0.1:3333", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:4444"]) { $1 }, nil))
        cases.append((base.merging(["AWS_ENDPOINT_URL": "http://127.0.0.1:3333", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"]) { $1 }, "dev"))
        cases.append((base, "half"))
        cases.append((base, "nowhere"))
        let request: [[String: Any]] = cases.map { ["env": $0.0, "profile": $0.1 as Any] }
        let answers = try s3BotocorePeer(["resolve": request])
        for (index, (environment, profile)) in cases.enumerated() {
            let answer = answers[index]
            let ours = Result { try S3Configuration.resolve(S3ConfigurationOverrides(profile: profile), environment: environment) }
            let label = "case \(index): profile \(profile ?? "-"), env \(environment.filter { $0.key != "HOME" && !$0.key.hasSuffix("_FILE") })"
            guard answer["ok"] as? Bool == true else {
                #expect(throws: (any Error).self, "\(label): botocore refused: \(answer["error"] ?? "")") { try ours.get() }
                continue
            }
            guard case .success(let resolved) = ours else {
                Issue.record("\(label): we refused, botocore resolved \(answer)")
                continue
            }
            #expect(resolved.credentials?.accessKeyID == answer["access_key"] as? String, "\(label)")
            #expect(resolved.credentials?.secretAccessKey == answer["secret_key"] as? String, "\(label)")
            #expect(resolved.credentials?.sessionToken == answer["token"] as? String, "\(label)")
            #expect(resolved.region == (answer["region"] as? String ?? "us-east-1"), "\(label)")
            #expect(resolved.endpoint?.absoluteString == answer["endpoint_url"] as? String, "\(label)")
            #expect(resolved.addressingStyle.rawValue == (answer["addressing_style"] as? String ?? "auto"), "\(label)")
            #expect(resolved.profile == answer["profile"] as? String, "\(label)")
        }
    }
}
