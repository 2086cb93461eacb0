import Foundation
import Sluice
import SluiceReceiver

package enum MultipartTestSupport {
    /// A fixed boundary for exact-byte tests.
    package static let boundary = "----SluiceBoundaryTESTTESTTESTTESTTESTTESTTESTTEST"

    /// Reads `source` front to back in `chunk`-sized reads (short reads allowed).
    package static func readAll(_ source: any ByteSource, chunk: Int = 71) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset: Int64 = 0
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0, at: offset) }
            if count == 0 { break }
            out += buffer[..<count]
            offset += Int64(count)
        }
        return out
    }

    package static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A fresh temporary directory, removed by the caller.
    package static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-mp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The header lines of each part: the lines between a delimiter and the blank line.
    package static func headerLines(of body: [UInt8], boundary: String) -> [[String]] {
        let delimiter = Array("--\(boundary)\r\n".utf8)
        var result: [[String]] = []
        var index = 0
        while let found = find(delimiter, in: body, from: index) {
            let start = found + delimiter.count
            guard let end = find(Array("\r\n\r\n".utf8), in: body, from: start) else { break }
            result.append(text(Array(body[start..<end])).components(separatedBy: "\r\n"))
            index = end
        }
        return result
    }

    package static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<(index + needle.count)]) == needle { return index }
        }
        return nil
    }
}
