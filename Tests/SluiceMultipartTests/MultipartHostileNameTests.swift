import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Names and filenames that try to leave their header: each arrives escaped, on the one
/// `Content-Disposition` line, or is refused.
@Suite struct MultipartHostileNameTests {
    typealias Support = MultipartTestSupport

    static let hostile: [(String, String)] = [
        ("plain", "plain"),
        ("quo\"te", "quo%22te"),
        ("\"; filename=\"evil.sh", "%22; filename=%22evil.sh"),
        ("line\r\nContent-Type: text/html", "line%0D%0AContent-Type: text/html"),
        ("lf\nX-Injected: 1", "lf%0AX-Injected: 1"),
        ("cr\rX-Injected: 1", "cr%0DX-Injected: 1"),
        ("\r\n\r\nbody", "%0D%0A%0D%0Abody"),
        ("semi;colon; name=x", "semi;colon; name=x"),
        ("Ünïcødé 名前 🙂", "Ünïcødé 名前 🙂"),
        ("percent%22already", "percent%22already"),
        ("back\\slash", "back\\slash"),
        ("tab\there", "tab\there"),
    ]

    @Test(arguments: hostile)
    func namesAndFilenamesStayOnTheirLine(raw: String, escaped: String) throws {
        let body = try MultipartBody(
            parts: [
                .field(raw, "value"),
                .bytes("f", [1, 2, 3], filename: raw),
            ], boundary: Support.boundary)
        let lines = Support.headerLines(of: try Support.readAll(body), boundary: Support.boundary)
        #expect(
            lines == [
                ["Content-Disposition: form-data; name=\"\(escaped)\""],
                ["Content-Disposition: form-data; name=\"f\"; filename=\"\(escaped)\"", "Content-Type: application/octet-stream"],
            ])
        // No CR or LF survives inside the quoted values.
        for line in lines.joined() {
            #expect(!line.contains("\r") && !line.contains("\n"))
        }
    }

    @Test func nonASCIIIsRawUTF8() throws {
        let body = try MultipartBody(parts: [.field("é", "v")], boundary: Support.boundary)
        let bytes = try Support.readAll(body)
        #expect(Support.find([0x6E, 0x61, 0x6D, 0x65, 0x3D, 0x22, 0xC3, 0xA9, 0x22], in: bytes, from: 0) != nil)
    }

    @Test func headerValuesCannotCarryLineBreaks() {
        #expect(throws: UploadError.self) { try HTTPHeader(name: "X-A", value: "a\r\nX-B: b").validate() }
        #expect(throws: MultipartError.self) { try MultipartPart.field("a", "b", contentType: "text/plain\r\nX: y") }
    }
}
