// Benchmark driver for Benchmarks/sigv4.sh: one upload of a file through Sluice's Uploader
// (curl transport) with a SigV4 payload mode, or CRC32C throughput. Not part of the library.
//
//   sigv4-bench upload MODE PATH URL [CHUNK]   MODE: plain | unsigned | signed | trailer-crc32c | signed-trailer-crc32c
//       plain: no signature at all; unsigned: header-signed UNSIGNED-PAYLOAD (raw body);
//       signed: aws-chunked STREAMING-AWS4-HMAC-SHA256-PAYLOAD; trailer-*: aws-chunked with a trailer
//   sigv4-bench crc32c BYTES BLOCK             CRC32C over BYTES in BLOCK-sized calls (a 64 MiB buffer)
//   sigv4-bench crc64nvme BYTES BLOCK          CRC64NVME (S3's full-object default), the same way
//   sigv4-bench sha256 BYTES BLOCK             SHA-256 over BYTES in BLOCK-sized pieces: one at a time
//       (OpenSSL) and two at a time (`sluice_sha256_pair`, as an aws-chunked body hashes its chunks)
// Prints one line: `seconds=S bytes=N`.
#if canImport(CSluiceCrypto)
import CSluiceCrypto
#endif
import Foundation
import Sluice

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("sigv4-bench: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("usage: sigv4-bench upload MODE PATH URL [CHUNK] | crc32c|crc64nvme BYTES BLOCK | sha256 BYTES BLOCK") }

switch command {
case "crc32c", "crc64nvme":
    guard arguments.count == 3, let total = Int(arguments[1]), let block = Int(arguments[2]), block > 0 else { fail("\(command) BYTES BLOCK") }
    let size = 64 << 20
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
    var crc: UInt64 = 0
    var done = 0
    let wide = command == "crc64nvme"
    let start = ContinuousClock.now
    while done < total {
        var offset = 0
        while offset + block <= size, done < total {
            let piece = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + block])
            crc = wide ? CRC.crc64nvme(crc, piece) : UInt64(CRC.crc32c(UInt32(truncatingIfNeeded: crc), piece))
            offset += block
            done += block
        }
    }
    let elapsed = ContinuousClock.now - start
    let seconds = elapsed / .seconds(1)
    let hardware = wide ? CRC.crc64nvmeUsesHardware : CRC.crc32cUsesHardware
    print("seconds=\(seconds) bytes=\(done) crc=\(String(crc, radix: 16)) hardware=\(hardware)")

#if canImport(CSluiceCrypto)
case "sha256":
    guard arguments.count == 3, let total = Int(arguments[1]), let block = Int(arguments[2]), block > 0 else { fail("sha256 BYTES BLOCK") }
    let size = 64 << 20
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
    var first = [UInt8](repeating: 0, count: 32)
    var second = [UInt8](repeating: 0, count: 32)
    /// Seconds to hash `total` bytes, `pieces` blocks per call.
    func measure(pieces: Int) -> Double {
        var done = 0
        let start = ContinuousClock.now
        while done < total {
            var offset = 0
            while offset + pieces * block <= size, done < total {
                let base = buffer.baseAddress! + offset
                if pieces == 1 {
                    sluice_sha256(base, block, &first)
                } else {
                    sluice_sha256_pair(base, block, base + block, block, &first, &second)
                }
                offset += pieces * block
                done += pieces * block
            }
        }
        return (ContinuousClock.now - start) / .seconds(1)
    }
    let one = measure(pieces: 1)
    let two = measure(pieces: 2)
    print("seconds=\(one) pair_seconds=\(two) bytes=\(total) interleaved=\(sluice_sha256_pair_is_interleaved() == 1)")
#endif

case "upload":
    guard arguments.count >= 4 else { fail("upload MODE PATH URL [CHUNK]") }
    let mode = arguments[1]
    let chunkSize = arguments.count > 4 ? Int(arguments[4]) ?? 65536 : 65536
    let source = try FileByteSource(path: arguments[2])
    let signer = SigV4Signer(credentials: S3Credentials(accessKeyID: "AKIDBENCH", secretAccessKey: "bench-secret"), region: "us-east-1")
    let request = try SigV4Request(method: "PUT", url: arguments[3])
    let upload: UploadRequest
    let body: any ByteSource
    switch mode {
    case "plain":
        upload = try UploadRequest(url: request.url, method: "PUT")
        body = source
    case "unsigned":
        upload = try signer.sign(request, payload: .unsigned).uploadRequest(for: request)
        body = source
    case "signed", "trailer-crc32c", "signed-trailer-crc32c":
        let chunked: AWSChunkedEncoding.Mode = mode == "signed" ? .signed : mode == "trailer-crc32c" ? .unsignedWithTrailer(.crc32c) : .signedWithTrailer(.crc32c)
        let (signature, encoded) = try signer.signChunked(request, body: source, mode: chunked, chunkSize: chunkSize)
        upload = try signature.uploadRequest(for: request)
        body = encoded
    default:
        fail("unknown mode \(mode)")
    }
    if ProcessInfo.processInfo.environment["SIGV4_BENCH_ENCODE_ONLY"] == "1" {
        // Reads the body the way the transport does (64 KiB at a time) and drops it: the
        // client-side cost of the mode without a network.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 64)
        var offset: Int64 = 0
        let start = ContinuousClock.now
        while offset < body.length { offset += Int64(try body.read(into: buffer, at: offset)) }
        let elapsed = ContinuousClock.now - start
        print("seconds=\(elapsed / .seconds(1)) bytes=\(offset)")
        exit(0)
    }
    var options = UploadOptions()
    options.bufferSize = 64 << 10
    let start = ContinuousClock.now
    let response = try await Uploader(transport: .curl, options: options).upload(upload, body: .bytes(body))
    let elapsed = ContinuousClock.now - start
    guard response.isSuccess else { fail("server answered \(response.status)") }
    let seconds = elapsed / .seconds(1)
    print("seconds=\(seconds) bytes=\(response.bytesSent)")

default:
    fail("unknown command \(command)")
}
