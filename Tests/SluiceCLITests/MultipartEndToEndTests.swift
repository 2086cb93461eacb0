import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver
import SluiceTestSupport

/// Bodies parsed by a multipart parser nobody here wrote (python-multipart, in
/// `Tests/Peers/multipart_server.py`), compared part by part, and against `/usr/bin/curl -F`.
@Suite(.serialized) struct MultipartEndToEndTests {
    typealias Support = MultipartTestSupport

    /// Names that try to leave their header, and what a parser reads back: the WHATWG
    /// escapes stay escaped (as from a browser), everything else arrives byte for byte.
    static let hostileNames: [(sent: String, parsed: String)] = [
        ("quo\"te", "quo%22te"),
        ("\"; filename=\"evil.sh", "%22; filename=%22evil.sh"),
        ("line\r\nContent-Type: text/html", "line%0D%0AContent-Type: text/html"),
        ("lf\nX-Injected: 1", "lf%0AX-Injected: 1"),
        ("semi;colon; name=x", "semi;colon; name=x"),
        ("Ünïcødé 名前 🙂", "Ünïcødé 名前 🙂"),
        ("back\\slash", "back\\slash"),
    ]

    /// Fields, hostile names and filenames, and a file part of more than 1 GiB of
    /// synthetic bytes, streamed (never held in memory) with the curl transport.
    @Test(.hangGuard)
    func largeBodyArrivesPartByPart() async throws {
        let large = SyntheticByteSource(length: (1 << 30) + 37, seed: 7)
        let small = SyntheticByteSource(length: 100_003, seed: 8)
        var parts: [MultipartPart] = [
            try .field("title", "Holiday photos\r\n--not a boundary"),
            try .source("archive", large, filename: "big.bin"),
        ]
        for (index, name) in Self.hostileNames.enumerated() {
            parts.append(try .field(name.sent, "value \(index)"))
            parts.append(try .source("file\(index)", small, filename: name.sent, contentType: "application/x-test; n=\(index)"))
        }
        let body = try MultipartBody(parts: parts)
        let peer = try MultipartPeer()
        defer { peer.stop() }

        let answer = try await peer.send(body, transport: .curl)

        // The body was streamed, never built: this process never held anything near 1 GiB.
        #if os(Linux)
        let peak = try #require(Self.peakResidentBytes())
        #expect(peak > 1 << 20 && peak < 512 << 20, "peak RSS \(peak >> 20) MiB for a \(body.length >> 20) MiB body")
        #endif
        #expect(answer.bytes == body.length)
        try #require(answer.parts.count == parts.count, "\(answer.parts)")
        let largeHash = try Digest.sha256(of: large)
        let smallHash = try Digest.sha256(of: small)
        #expect(
            answer.parts[0]
                == MultipartPeer.Part(
                    name: "title", filename: nil, content_type: nil,
                    headers: [["Content-Disposition", "form-data; name=\"title\""]],
                    size: 32, sha256: Self.sha256("Holiday photos\r\n--not a boundary")))
        #expect(
            answer.parts[1]
                == MultipartPeer.Part(
                    name: "archive", filename: "big.bin", content_type: "application/octet-stream",
                    headers: [
                        ["Content-Disposition", "form-data; name=\"archive\"; filename=\"big.bin\""],
                        ["Content-Type", "application/octet-stream"],
                    ],
                    size: large.length, sha256: largeHash))
        for (index, name) in Self.hostileNames.enumerated() {
            let value = "value \(index)"
            #expect(
                answer.parts[2 + 2 * index]
                    == MultipartPeer.Part(
                        name: name.parsed, filename: nil, content_type: nil,
                        headers: [["Content-Disposition", "form-data; name=\"\(name.parsed)\""]],
                        size: Int64(value.utf8.count), sha256: Self.sha256(value)))
            #expect(
                answer.parts[3 + 2 * index]
                    == MultipartPeer.Part(
                        name: "file\(index)", filename: name.parsed, content_type: "application/x-test; n=\(index)",
                        headers: [
                            ["Content-Disposition", "form-data; name=\"file\(index)\"; filename=\"\(name.parsed)\""],
                            ["Content-Type", "application/x-test; n=\(index)"],
                        ],
                        size: small.length, sha256: smallHash))
        }
    }

    /// The same `-F` arguments, parsed by `FormArgument` and sent by Sluice, or sent by
    /// `/usr/bin/curl`, give the same parts: names, filenames, types, headers, sizes, hashes.
    @Test(arguments: TransportKind.allCases)
    func sameArgumentsParseTheSameWithCurl(transport: TransportKind) async throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let dir = directory.path
        try Data("plain text\n".utf8).write(to: directory.appendingPathComponent("a.txt"))
        try Data(try SyntheticByteSource(length: 3 << 20, seed: 3).bytes(in: 0..<(3 << 20)))
            .write(to: directory.appendingPathComponent("blob.bin"))
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: directory.appendingPathComponent("we\"ird;name.png"))

        let forms = [
            "title=Holiday photos",
            "quote\"name=v",
            "multi\r\nline=v",
            "ünï=ü",
            "quoted=\"a;b\\\"c\"",
            "typed=v;type=text/plain; charset=utf-8",
            "asfile=v;filename=x y",
            "f=@\(dir)/blob.bin",
            "g=@\(dir)/a.txt;filename=\"evil\\\"; filename=x.sh\"",
            "h=@\"\(dir)/we\\\"ird;name.png\"",
            "i=@\(dir)/blob.bin;type=application/x-custom;filename=Ω résumé.pdf",
            "j=<\(dir)/a.txt",
            "k=@\(dir)/a.txt;headers=\"X-Note: hi\"",
            "m=@\(dir)/blob.bin;filename=\"line\r\nbreak\"",
            "n=@\(dir)/a.txt;filename=renamed.html",
        ]
        let literals = ["lit=@not;a=file", "lit2=<nor \"this\""]

        let parts = try forms.map(FormArgument.parse) + literals.map(FormArgument.parseLiteral)
        let body = try MultipartBody(parts: parts)
        defer { body.close() }
        let peer = try MultipartPeer()
        defer { peer.stop() }

        let sluice = try await peer.send(body, transport: transport)
        let curl = try peer.sendWithCurl(forms.flatMap { ["-F", $0] } + literals.flatMap { ["--form-string", $0] })

        #expect(sluice.parts.count == forms.count + literals.count)
        #expect(sluice.parts.count == curl.parts.count)
        for (ours, theirs) in zip(sluice.parts, curl.parts) {
            #expect(ours == theirs)
        }
        #expect(sluice.parts.first { $0.name == "g" }?.filename == "evil%22; filename=x.sh")
        #expect(sluice.parts.first { $0.name == "m" }?.filename == "line%0D%0Abreak")
        #expect(sluice.parts.first { $0.name == "ünï" } != nil)
    }

    /// This process's peak resident set (`VmHWM`), where /proc has it.
    static func peakResidentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    static func sha256(_ text: String) -> String {
        let digest = Digest(.sha256)
        digest.update(Array(text.utf8))
        return digest.finalizeHex()
    }
}
