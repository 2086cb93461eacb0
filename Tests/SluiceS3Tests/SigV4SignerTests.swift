import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
#if canImport(CSluiceCrypto)
import CSluiceCrypto
#endif
import SluiceTestSupport

@Suite struct SigV4SignerTests {
    static let signer = SigV4Signer(
        credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    static let timestamp = SigV4Timestamp(amzDate: "20150830T123600Z")!

    /// S3: the path is encoded once and never normalised; `x-amz-content-sha256` is always sent.
    @Test func s3PathsAreEncodedOnceAndNeverNormalised() throws {
        let request = try SigV4Request(method: "PUT", endpoint: URL(string: "http://127.0.0.1:8333")!, path: "/bucket/a//b/./../c d+é%41")
        #expect(request.encodedPath == "/bucket/a//b/./../c%20d%2B%C3%A9%2541")
        #expect(request.url.absoluteString == "http://127.0.0.1:8333/bucket/a//b/./../c%20d%2B%C3%A9%2541")
        let signed = Self.signer.sign(request, payload: .unsigned, at: Self.timestamp)
        let lines = signed.canonicalRequest.components(separatedBy: "\n")
        #expect(lines[1] == "/bucket/a//b/./../c%20d%2B%C3%A9%2541")
        #expect(signed.header("x-amz-content-sha256") == "UNSIGNED-PAYLOAD")
        #expect(signed.signedHeaders == "host;x-amz-content-sha256;x-amz-date")
        #expect(lines.last == "UNSIGNED-PAYLOAD")
        #expect(signed.header("Host") == "127.0.0.1:8333")

        let normalizing = SigV4Signer(credentials: Self.signer.credentials, region: "us-east-1", service: "service", rules: .normalizing)
        let other = normalizing.sign(request, payload: .empty, at: Self.timestamp)
        #expect(other.canonicalRequest.components(separatedBy: "\n")[1] == "/bucket/a/c%20d%2B%C3%A9%2541")
        #expect(other.header("x-amz-content-sha256") == nil)
    }

    @Test func sessionTokensAreSentAndSigned() {
        var signer = Self.signer
        signer.credentials.sessionToken = "token/+="
        let request = SigV4Request(method: "GET", host: "example.com", path: "/b/k", headers: [SigV4Header("X-Amz-Security-Token", "stale")])
        let signed = signer.sign(request, payload: .empty, at: Self.timestamp)
        #expect(signed.headers.filter { $0.name.lowercased() == "x-amz-security-token" }.map(\.value) == ["token/+="])
        #expect(signed.signedHeaders == "host;x-amz-content-sha256;x-amz-date;x-amz-security-token")
        #expect(signed.canonicalRequest.contains("\nx-amz-security-token:token/+=\n"))
    }

    @Test func urlsParseDecodedAndReEncodeTheSame() throws {
        let request = try SigV4Request(method: "GET", url: "https://h.example:8443/b/%E1%88%B4%20x//y?b=2&a=%2B&a=&c")
        #expect(request.host == "h.example:8443")
        #expect(request.path == "/b/ሴ x//y")
        #expect(request.query == [SigV4QueryItem("b", "2"), SigV4QueryItem("a", "+"), SigV4QueryItem("a", ""), SigV4QueryItem("c", "")])
        #expect(SigV4Signer.canonicalQuery(request.query) == "a=&a=%2B&b=2&c=")
        #expect(throws: SigV4Error.self) { _ = try SigV4Request(method: "GET", url: "ftp://h/x") }
        #expect(throws: SigV4Error.self) { _ = try SigV4Request(method: "GET", url: "http://h/%zz") }
        let endpoint = try SigV4Request(method: "GET", endpoint: URL(string: "https://s3.example.com:443/prefix/")!, path: "bucket/key")
        #expect(endpoint.host == "s3.example.com")
        #expect(endpoint.path == "/prefix/bucket/key")
    }

    @Test func headerValuesAreTrimmedAndFolded() {
        let request = SigV4Request(
            method: "POST", host: "h", path: "/",
            headers: [
                SigV4Header("My-Header", "  a   b \t c  "), SigV4Header("my-header", "second"), SigV4Header("User-Agent", "x"),
            ])
        let signed = Self.signer.sign(request, payload: .empty, at: Self.timestamp)
        #expect(signed.canonicalRequest.contains("\nmy-header:a b c,second\n"))
        #expect(!signed.signedHeaders.contains("user-agent"))
    }

    /// RFC 4231 HMAC-SHA256 vectors (a short key, a key longer than the block), and OpenSSL's
    /// own `HMAC()` on random input.
    @Test func hmacSHA256() {
        let short = SigningCrypto.hmacSHA256(key: [UInt8](repeating: 0x0B, count: 20), "Hi There")
        #expect(short.hexString == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let long = SigningCrypto.hmacSHA256(key: [UInt8](repeating: 0xAA, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First")
        #expect(long.hexString == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #if !canImport(CryptoKit)
        var generator = SeededGenerator(seed: 11)
        for keyLength in [0, 1, 32, 63, 64, 65, 200] {
            let key = (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let message = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var expected = [UInt8](repeating: 0, count: 32)
            _ = key.withUnsafeBytes { k in
                message.withUnsafeBytes { m in
                    expected.withUnsafeMutableBufferPointer {
                        sluice_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, $0.baseAddress)
                    }
                }
            }
            #expect(message.withUnsafeBytes { SigningCrypto.hmacSHA256(key: key, $0) } == expected, "key \(keyLength) bytes")
        }
        #endif
    }

    /// Two ranges hashed at once (interleaved with the x86-64 SHA extensions): the FIPS 180-2
    /// "abc" and empty vectors, and every length around the block and padding edges, equal or
    /// not, from any alignment, against one-shot SHA-256 (OpenSSL or CryptoKit).
    /// The CPU flags Linux reports (/proc/cpuinfo), independent of the C code's cpuid check.
    static var cpuFlags: Set<String> {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let line = info.split(separator: "\n").first { $0.hasPrefix("flags") } ?? ""
        return Set(line.split(separator: " ").map(String.init))
    }

    @Test func sha256OfTwoRangesAtOnce() {
        let abc = Array("abc".utf8)
        let (first, second) = abc.withUnsafeBytes { a in [UInt8]().withUnsafeBytes { SigningCrypto.sha256(a, $0) } }
        #expect(first.hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(second.hexString == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var generator = SeededGenerator(seed: 12)
        let bytes = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let lengths = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 65_536, 69_000]
        var interleaved = 0
        bytes.withUnsafeBytes { all in
            for a in lengths {
                for b in lengths + [a + 64, max(0, a - 1)] {
                    for start in [0, 3] where start + max(a, b) + 1 <= all.count {
                        let left = UnsafeRawBufferPointer(rebasing: all[start..<start + a])
                        let right = UnsafeRawBufferPointer(rebasing: all[1 + start..<1 + start + b])
                        let (x, y) = SigningCrypto.sha256(left, right)
                        #expect(x == SigningCrypto.sha256(left), "\(a) and \(b) from \(start)")
                        #expect(y == SigningCrypto.sha256(right), "\(a) and \(b) from \(start)")
                        #if !canImport(CryptoKit)
                        // The interleaved code itself, called directly too.
                        var pair = [UInt8](repeating: 0, count: 64)
                        let done = pair.withUnsafeMutableBufferPointer {
                            sluice_sha256_pair_interleaved(left.baseAddress, a, right.baseAddress, b, $0.baseAddress, $0.baseAddress! + 32)
                        }
                        if done == 1 {
                            interleaved += 1
                            #expect(Array(pair[..<32]) == x && Array(pair[32...]) == y, "\(a) and \(b) from \(start)")
                        }
                        #endif
                    }
                }
            }
        }
        // On a CPU with the SHA extensions (as the kernel reports them) the interleaved code
        // ran, and the signing path uses it: the C target is optimized in every build.
        #if os(Linux) && arch(x86_64)
        let cpuHasSHA = Self.cpuFlags.contains("sha_ni")
        #expect(cpuHasSHA == (interleaved > 0), "SHA extensions: \(cpuHasSHA); \(interleaved) pairs hashed interleaved")
        #expect(SigningCrypto.sha256PairIsInterleaved == cpuHasSHA, "SHA extensions: \(cpuHasSHA); the signing path interleaves: \(SigningCrypto.sha256PairIsInterleaved)")
        #endif
    }

    @Test func timestamps() {
        #expect(SigV4Timestamp(Date(timeIntervalSince1970: 1_440_938_160)).amzDate == "20150830T123600Z")
        // Every field under 10 (each written with its zero).
        #expect(SigV4Timestamp(Date(timeIntervalSince1970: 981_173_106)).amzDate == "20010203T040506Z")
        #expect(SigV4Timestamp(amzDate: "20150830T123600Z")?.day == "20150830")
        #expect(SigV4Timestamp(amzDate: "2015-08-30") == nil)
    }

    /// The full SHA-256 payload mode hashes a random-access source in one pass.
    @Test func fullPayloadHash() throws {
        let source = SyntheticByteSource(length: 3_000_001, seed: 4)
        let payload = try SigV4Payload.sha256(of: ShortReadSource(base: source, chunk: 70_000), chunkSize: 1 << 16)
        #expect(payload == .sha256(hex: try Digest.sha256(of: source)))
        #expect(SigV4Payload.sha256(of: []) == .empty)
    }
}
