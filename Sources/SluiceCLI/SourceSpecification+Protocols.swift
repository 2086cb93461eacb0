import Foundation
import Sluice

// The tus and S3 clients take sources as types; these open what a SOURCE argument names.

extension SourceSpecification {
    /// Parses SOURCE, reporting a malformed one as the protocol's own error.
    init(parsing text: String, orThrow wrap: (UsageError) -> any Error) throws {
        do { try self.init(parsing: text) } catch { throw wrap(error) }
    }
}

extension TusClient {
    /// Uploads what SOURCE names (a path, `synthetic:SIZE[:SEED]` or an http(s) URL) to the
    /// creation endpoint, resuming a stored upload of the same source when there is one.
    func upload(
        source: String, to endpoint: URL, remote: RemoteSourceOptions = RemoteSourceOptions(), store: SourceStore = SourceStore(),
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> TusUploadResult {
        let specification = try SourceSpecification(parsing: source, orThrow: { TusError(.source, "\($0)", underlying: $0) })
        if case .object(let location) = specification {
            let bytes: RemoteByteSource
            do { bytes = try await SourceSpecification.openObject(location, store: store, options: remote) } catch {
                throw TusError(.source, "\(error)", underlying: error)
            }
            defer { bytes.close() }
            let opened = TusSource(
                bytes, identity: SourceSpecification.remoteIdentity(bytes), name: location.key.split(separator: "/").last.map(String.init))
            return try await upload(opened, to: endpoint, progress: progress)
        }
        if case .remote(let url) = specification {
            let bytes: RemoteByteSource
            do { bytes = try await SourceSpecification.openRemote(url, options: remote) } catch {
                throw TusError(.source, "\(error)", underlying: error)
            }
            defer { bytes.close() }
            let opened = TusSource(
                bytes, identity: SourceSpecification.remoteIdentity(bytes), name: SourceSpecification.remoteName(url))
            return try await upload(opened, to: endpoint, progress: progress)
        }
        let opened = try TusSource.open(specification)
        defer { opened.close() }
        return try await upload(opened, to: endpoint, progress: progress)
    }
}

extension TusSource {
    /// Opens what SOURCE names.
    ///
    /// A file whose size is reported as 0 but that has content (`/proc/cpuinfo`) is read into
    /// memory first, up to `FileStreamSource.snapshotLimit` (tus needs the length up front),
    /// and refused above; its fingerprint is then its content alone.
    ///
    /// - Returns: A source to pass to `TusClient.upload`; call `close()` after it.
    /// - Throws: `TusError` with code `.sourceNotRandomAccess` for stdin and FIFOs, `.source`
    ///   when the file cannot be opened.
    static func open(_ specification: SourceSpecification) throws -> TusSource {
        switch specification {
        case .object(let location):
            throw TusError(.source, "\(location): an s3:// source is opened by TusClient.upload(source:)")
        case .remote(let url):
            throw TusError(.source, "\(RemoteSourceError.shown(url)): an http(s) source is opened by TusClient.upload(source:)")
        case .standardInput:
            throw TusError(.sourceNotRandomAccess, "tus needs a source it can read from any offset to resume; stdin is not one (save it to a file first)")
        case .synthetic(let length, let seed):
            return TusSource(
                SyntheticByteSource(length: length, seed: seed), identity: "synthetic:\(length):\(seed)",
                name: "synthetic-\(length)-\(seed).bin")
        case .file(let path):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            do {
                return TusSource(file: try FileByteSource(path: absolute))
            } catch ByteSourceError.notRegularFile(_, let kind) where kind == "FIFO" {
                throw TusError(.sourceNotRandomAccess, "tus needs a source it can read from any offset to resume; \(path) is a FIFO (save what it yields to a file first)")
            } catch ByteSourceError.unknownLength {
                let bytes: [UInt8]
                do { bytes = try FileStreamSource.contents(ofUnknownLength: absolute) } catch {
                    throw TusError(
                        .source,
                        "\(path): its reported size is not its length (a /proc or /sys file) and it holds more than \(FileStreamSource.snapshotLimit >> 20) MiB; tus needs the length up front (copy it to a regular file first)",
                        underlying: error)
                }
                return TusSource(MemoryByteSource(bytes), identity: "file:\(absolute)", name: (absolute as NSString).lastPathComponent)
            } catch {
                throw TusError(.source, "\(error)", underlying: error)
            }
        }
    }
}

extension TusUploadResult {
    /// One line for stderr: what was done, from where, and what went twice.
    var summary: String {
        var line = created ? "created \(uploadURL.absoluteString)" : "resumed \(uploadURL.absoluteString) at \(resumedFrom)"
        line += ": \(length) bytes at the server, \(bytesSent) sent in \(dataRequests) requests"
        line += ", \(bytesResent) re-sent, \(retries) retries"
        if checksumMismatches > 0 { line += ", \(checksumMismatches) checksum mismatches" }
        if let previousUploadGone { line += " (the stored upload \(previousUploadGone) was gone)" }
        return line + rateSuffix(bytes: bytesSent, seconds: elapsed)
    }
}

extension S3Client {
    /// Uploads what SOURCE names (`PATH`, `-`, `synthetic:SIZE[:SEED]` or an http(s) URL); a key
    /// naming a folder (empty or ending in `/`) gets the file's name.
    func upload(
        source: String, to location: S3Location, remote: RemoteSourceOptions = RemoteSourceOptions(),
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        switch try SourceSpecification(parsing: source, orThrow: { S3Error(.source, "\($0)", underlying: $0) }) {
        case .remote(let url):
            let bytes: RemoteByteSource
            do { bytes = try await SourceSpecification.openRemote(url, options: remote) } catch {
                throw S3Error(.source, "\(error)", underlying: error)
            }
            defer { bytes.close() }
            let target = try location.resolvingKey(forSourceNamed: SourceSpecification.remoteName(url))
            let source = S3Source(bytes, identity: SourceSpecification.remoteIdentity(bytes), fingerprint: S3SourceFingerprint(size: bytes.length))
            return try await upload(source, to: target, progress: progress)
        case .object(let from):
            // `s3 cp` copies an object by the store (`S3Client.copy`) before it comes here.
            throw S3Error(.source, "\(from): an s3:// source is copied by the store (S3Client.copy), not uploaded")
        case .standardInput:
            let target = try location.resolvingKey(forSourceNamed: nil)
            // The library's stream reader waits for stdin in a poll that a cancel ends at once.
            return try await uploadStream(FileDescriptorStream.standardInput, to: target, progress: progress)
        case .synthetic(let length, let seed):
            let source = S3Source.synthetic(length: length, seed: seed)
            let target = try location.resolvingKey(forSourceNamed: "synthetic-\(length)-\(seed).bin")
            return try await upload(source, to: target, progress: progress)
        case .file(let path):
            return try await upload(file: path, to: location, progress: progress)
        }
    }
}

extension S3UploadResult {
    /// One line for stderr.
    var summary: String {
        var line = "\(resumed ? "resumed and completed" : "uploaded") \(location): \(length) bytes"
        line += uploadID == nil ? " in one PutObject" : " in \(partCount) parts"
        if partsSkipped > 0 { line += " (\(partsSkipped) already at the server)" }
        line += ", \(bytesSent) sent, \(retries) retries"
        if let checksum { line += ", checksum \(checksum) verified" }
        return line + rateSuffix(bytes: bytesSent, seconds: elapsed)
    }
}

/// `, 1.2 s, 329.0 MiB/s`: one unit style everywhere, binary with `B/s` (as curl and rclone
/// show rates); the exact byte counts stay in the line before it.
private func rateSuffix(bytes: Int64, seconds: Double) -> String {
    let rate = seconds > 0 ? Double(bytes) / seconds : 0
    return String(format: ", %.1f s, ", seconds) + Terminal.bytes(Terminal.whole(rate)) + "/s"
}
