import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// `TusOptions.parallelUploads` partial uploads of one source, sent at once and joined by
/// the concatenation extension (tus-js-client's `parallelUploads`).
///
/// The source is cut into `parallelUploads` ranges of (nearly) equal size. Each range is a
/// tus upload of its own, created with `Upload-Concat: partial` and stored for resume under
/// the source's identity plus its range, so a run killed at any point resumes every partial
/// upload at its server offset. When all are complete, `POST` with
/// `Upload-Concat: final;URL1 URL2 ...` creates the upload that holds the whole source; only
/// then are the partial records dropped.
package final class TusParallelJob {
    private let client: TusClient
    private let source: TusSource
    private let endpoint: URL
    private let progress: (@Sendable (UploadProgress) -> Void)?

    package init(client: TusClient, source: TusSource, endpoint: URL, progress: (@Sendable (UploadProgress) -> Void)?) {
        self.client = client
        self.source = source
        self.endpoint = endpoint
        self.progress = progress
    }

    package func run() async throws -> TusUploadResult {
        let start = ContinuousClock.now
        let length = source.bytes.length
        let count = client.options.parallelUploads
        let ranges = UploadPart.plan(length: length, partSize: (length + Int64(count) - 1) / Int64(count))
        let meter = ProgressMeter(total: length, interval: client.options.transfer.progressInterval, report: progress)
        let sums = Lock([Int64](repeating: 0, count: ranges.count))
        var partClient = client
        partClient.options.transfer.progressInterval = .zero
        // `parallelUploads` partial uploads run at once, whatever the engine's per-origin limit.
        partClient.options.transfer.concurrencyBoundByCaller = true

        var partials: [TusSource] = []
        for part in ranges {
            partials.append(
                TusSource(
                    try SliceByteSource(source.bytes, range: part.range),
                    identity: "\(source.identity)#tus-partial-\(part.number)-of-\(ranges.count)-\(part.offset)-\(part.length)",
                    name: source.name, modificationTime: source.modificationTime, device: source.device, inode: source.inode,
                    changeTime: source.changeTime))
        }
        let client = partClient
        let endpoint = self.endpoint
        let results = try await withThrowingTaskGroup(of: (Int, TusUploadResult).self) { group in
            for (index, partial) in partials.enumerated() {
                group.addTask {
                    let job = TusUploadJob(
                        client: client, source: partial, endpoint: endpoint, creationHeaders: [("Upload-Concat", "partial")],
                        keepsRecord: true
                    ) { progress in
                        let total = sums.withLock { sums -> Int64 in
                            sums[index] = progress.bytesSent
                            return sums.reduce(0, +)
                        }
                        meter.update(total)
                    }
                    return (index, try await job.run())
                }
            }
            var results = [TusUploadResult?](repeating: nil, count: partials.count)
            for try await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }

        let finalURL = try await concatenate(results.map(\.uploadURL))
        if client.options.resumes {
            let store = TusStateStore(directory: client.options.stateDirectory)
            for partial in partials { store.remove(endpoint: endpoint.absoluteString, identity: partial.identity) }
        }
        meter.finish(length)
        let elapsed = ContinuousClock.now - start
        return TusUploadResult(
            uploadURL: finalURL, length: length, resumedFrom: results.reduce(0) { $0 + $1.resumedFrom },
            created: results.contains { $0.created }, bytesSent: results.reduce(0) { $0 + $1.bytesSent },
            dataRequests: results.reduce(0) { $0 + $1.dataRequests }, retries: results.reduce(0) { $0 + $1.retries },
            offsetConflicts: results.reduce(0) { $0 + $1.offsetConflicts },
            checksumMismatches: results.reduce(0) { $0 + $1.checksumMismatches },
            usedChecksums: results.contains { $0.usedChecksums }, previousUploadGone: nil,
            elapsed: elapsed.inSeconds)
    }

    /// `POST endpoint` with `Upload-Concat: final;...`; returns the final upload's URL.
    private func concatenate(_ urls: [URL]) async throws -> URL {
        var headers = [("Upload-Concat", "final;" + urls.map(\.absoluteString).joined(separator: " "))]
        var metadata = client.options.metadata
        if client.options.addsDefaultMetadata {
            if metadata["filename"] == nil { metadata["filename"] = source.name }
            if metadata["filetype"] == nil { metadata["filetype"] = "application/octet-stream" }
        }
        if !metadata.isEmpty { headers.append(("Upload-Metadata", TusClient.encodeMetadata(metadata))) }
        let request = try client.makeRequest(endpoint, method: "POST", headers: headers)
        var retrier = TusRetrier(options: client.options)
        while true {
            do {
                let response = try await client.send(request)
                try client.check(response, url: endpoint, action: "POST (Upload-Concat: final)")
                return try client.createdLocation(in: response, endpoint: endpoint, what: "the final concatenation POST")
            } catch {
                try await retrier.absorb(error, action: "POST (Upload-Concat: final)", uploadURL: nil, total: source.bytes.length)
            }
        }
    }
}
