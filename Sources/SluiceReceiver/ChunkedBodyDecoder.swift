import Sluice
/// Decodes an HTTP/1.1 `Transfer-Encoding: chunked` body (RFC 9112 §7.1), strictly, in
/// constant memory.
///
/// Feed it the bytes that follow the request head, in pieces of any size; it hands back the
/// body's data as slices of the input and stops at the end of the trailer section, so the
/// bytes after it (a pipelined next request) stay with the caller.
///
/// Strict means: chunk sizes are 1 to 16 hex digits and at most `Int64.max`; extensions are
/// `;name[=token|quoted-string]` with optional blanks around `;` and `=`; every line ends in
/// CRLF (a bare LF or CR is an error); chunk data is followed by exactly CRLF; trailer fields
/// are `token ":" value` with no folding.
///
/// - Important: Memory is bounded: a size or trailer line may hold at most `maxLineLength`
///   bytes and the trailer section at most `maxTrailerBytes`; chunk data is never copied.
struct ChunkedBodyDecoder {
    /// Why a chunked body was rejected.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case malformedChunkSize
        case chunkSizeTooLarge
        case malformedExtension
        case lineTooLong
        case missingCRLF
        case malformedTrailer
        case trailersTooLarge

        var description: String {
            switch self {
            case .malformedChunkSize: return "malformed chunk size"
            case .chunkSizeTooLarge: return "chunk size too large"
            case .malformedExtension: return "malformed chunk extension"
            case .lineTooLong: return "chunk size or trailer line too long"
            case .missingCRLF: return "chunk line or chunk data not followed by CRLF"
            case .malformedTrailer: return "malformed trailer field"
            case .trailersTooLarge: return "trailer section too large"
            }
        }
    }

    private enum State: Equatable {
        case sizeLine
        case sizeLineLF
        case data(remaining: Int64)
        case dataCR
        case dataLF
        case trailerLine
        case trailerLineLF
        case finished
    }

    static let maxLineLength = 4096
    static let maxTrailerBytes = 16 * 1024

    private var state: State = .sizeLine
    /// The size or trailer line being read, without its CRLF.
    private var line: [UInt8] = []
    private var trailerBytes = 0

    /// The body's decoded bytes so far.
    private(set) var decodedBytes: Int64 = 0
    /// The trailer fields, once the body is finished.
    private(set) var trailers: [HTTPHeader] = []

    init() {
        line.reserveCapacity(Self.maxLineLength)
    }

    /// True once the last chunk and the trailer section have been read.
    var isFinished: Bool { state == .finished }

    /// Consumes bytes of the chunked body.
    ///
    /// - Parameters:
    ///   - input: The next bytes received.
    ///   - data: Called with each run of body data, a slice of `input`, in order.
    /// - Returns: How many bytes of `input` belong to the body; fewer than `input.count` only
    ///   when the body finished inside `input`.
    /// - Throws: `Failure` when the framing is malformed; the decoder is then unusable.
    mutating func consume(
        _ input: UnsafeRawBufferPointer,
        data: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        var index = 0
        while index < input.count {
            switch state {
            case .finished:
                return index
            case .sizeLine, .trailerLine:
                let isSize = state == .sizeLine
                while index < input.count {
                    let byte = input[index]
                    index += 1
                    if byte == UInt8(ascii: "\r") {
                        state = isSize ? .sizeLineLF : .trailerLineLF
                        break
                    }
                    if byte == UInt8(ascii: "\n") { throw Failure.missingCRLF }
                    guard line.count < Self.maxLineLength else { throw Failure.lineTooLong }
                    line.append(byte)
                }
            case .sizeLineLF:
                guard input[index] == UInt8(ascii: "\n") else { throw Failure.missingCRLF }
                index += 1
                let size = try Self.parseSizeLine(line)
                line.removeAll(keepingCapacity: true)
                state = size == 0 ? .trailerLine : .data(remaining: size)
            case .data(let remaining):
                let count = Int(min(remaining, Int64(input.count - index)))
                try data(UnsafeRawBufferPointer(rebasing: input[index..<index + count]))
                index += count
                decodedBytes += Int64(count)
                state = remaining == Int64(count) ? .dataCR : .data(remaining: remaining - Int64(count))
            case .dataCR:
                guard input[index] == UInt8(ascii: "\r") else { throw Failure.missingCRLF }
                index += 1
                state = .dataLF
            case .dataLF:
                guard input[index] == UInt8(ascii: "\n") else { throw Failure.missingCRLF }
                index += 1
                state = .sizeLine
            case .trailerLineLF:
                guard input[index] == UInt8(ascii: "\n") else { throw Failure.missingCRLF }
                index += 1
                if line.isEmpty {
                    state = .finished
                    return index
                }
                trailerBytes += line.count + 2
                guard trailerBytes <= Self.maxTrailerBytes else { throw Failure.trailersTooLarge }
                guard let field = HTTPSyntax.parseFieldLine(line[...]) else { throw Failure.malformedTrailer }
                trailers.append(field)
                line.removeAll(keepingCapacity: true)
                state = .trailerLine
            }
        }
        return index
    }

    /// Parses `chunk-size [ chunk-ext ]` (without CRLF).
    static func parseSizeLine(_ line: [UInt8]) throws -> Int64 {
        var index = 0
        var size: Int64 = 0
        while index < line.count, let digit = HTTPSyntax.hexValue(line[index]) {
            guard index < 16 else { throw Failure.chunkSizeTooLarge }
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw Failure.chunkSizeTooLarge }
            size = shifted + Int64(digit)
            index += 1
        }
        guard index > 0 else { throw Failure.malformedChunkSize }
        // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
        while true {
            index = HTTPSyntax.skipBlanks(line, from: index)
            if index == line.count { return size }
            guard line[index] == UInt8(ascii: ";") else { throw Failure.malformedChunkSize }
            index = HTTPSyntax.skipBlanks(line, from: index + 1)
            let nameEnd = HTTPSyntax.tokenEnd(line, from: index)
            guard nameEnd > index else { throw Failure.malformedExtension }
            index = HTTPSyntax.skipBlanks(line, from: nameEnd)
            guard index < line.count, line[index] == UInt8(ascii: "=") else { continue }
            index = HTTPSyntax.skipBlanks(line, from: index + 1)
            guard index < line.count else { throw Failure.malformedExtension }
            if line[index] == UInt8(ascii: "\"") {
                guard let end = HTTPSyntax.quotedStringEnd(line, from: index) else { throw Failure.malformedExtension }
                index = end
            } else {
                let valueEnd = HTTPSyntax.tokenEnd(line, from: index)
                guard valueEnd > index else { throw Failure.malformedExtension }
                index = valueEnd
            }
        }
    }
}
