import SluiceRequests

/// The AWS CLI's transfer settings of a profile, from the nested `s3 =` section of
/// `~/.aws/config`: what `aws s3` commands apply unless a flag says otherwise. Each is nil when
/// the profile does not set it.
///
/// ```
/// [default]
/// s3 =
///   multipart_threshold = 64MB
///   multipart_chunksize = 16MB
///   max_concurrent_requests = 20
///   max_bandwidth = 50MB/s
/// ```
///
/// Sizes are read as the AWS CLI reads them: a number of bytes, or with `KB`, `MB`, `GB`, `TB`
/// (binary, as the AWS CLI counts them: `16MB` is 16 MiB) or `KiB` … `TiB`; a rate is a size
/// followed by `B/s`.
public struct S3TransferSettings: Sendable, Equatable {
    /// `multipart_threshold`: a file of this size or more goes as a multipart upload, a smaller
    /// one in one `PutObject` (`S3Options.multipartThreshold`).
    public var multipartThreshold: Int64?
    /// `multipart_chunksize`: the part size (`S3Options.partSize`).
    public var multipartChunkSize: Int64?
    /// `max_concurrent_requests`: requests in flight (`S3Options.concurrency`).
    public var maximumConcurrentRequests: Int?
    /// `max_bandwidth`: bytes per second every request draws from (`UploadOptions.rateLimit`).
    public var maximumBandwidth: Int64?

    /// No setting: the defaults of `S3Options`.
    public init() {}

    /// One of the settings, to name those a caller set itself (a flag wins over the profile).
    public enum Setting: Sendable, Hashable, CaseIterable {
        /// `multipart_threshold`.
        case multipartThreshold
        /// `multipart_chunksize`.
        case multipartChunkSize
        /// `max_concurrent_requests`.
        case maximumConcurrentRequests
        /// `max_bandwidth`.
        case maximumBandwidth
    }

    /// The settings of the nested `s3 =` section `table`, read from `path` (named in errors).
    ///
    /// - Throws: `S3Error` `.configuration` naming the file, the setting and its value, for a
    ///   value the AWS CLI would refuse or S3 cannot take (a part size under 5 MiB).
    package init(_ table: [String: String], path: String) throws(S3Error) {
        func refuse(_ name: String, _ value: String, _ why: String) -> S3Error {
            S3Error(.configuration, "\(name) = \(value) in \(path): \(why)")
        }
        if let text = table["multipart_chunksize"] {
            guard let size = Self.size(text) else { throw refuse("multipart_chunksize", text, "not a size such as 16MB") }
            do { try S3PartPlan.validate(partSize: size) } catch { throw refuse("multipart_chunksize", text, error.message) }
            multipartChunkSize = size
        }
        if let text = table["multipart_threshold"] {
            guard let size = Self.size(text) else { throw refuse("multipart_threshold", text, "not a size such as 64MB") }
            guard size <= S3PartPlan.maximumPartSize else {
                throw refuse("multipart_threshold", text, "above S3's 5 GiB for one PutObject")
            }
            multipartThreshold = size
        }
        if let text = table["max_concurrent_requests"] {
            guard let count = Int(text.trimmingWhitespace), (1...256).contains(count) else {
                throw refuse("max_concurrent_requests", text, "not a whole number from 1 to 256")
            }
            maximumConcurrentRequests = count
        }
        if let text = table["max_bandwidth"] {
            guard let rate = Self.rate(text), (try? RateLimit(bytesPerSecond: rate)) != nil else {
                throw refuse("max_bandwidth", text, "not a rate from 1 byte to 1TiB per second, such as 50MB/s")
            }
            maximumBandwidth = rate
        }
    }

    /// `text` as the AWS CLI reads a size (`human_readable_to_bytes`): bytes, or a whole number
    /// with `KB`/`KiB` … `TB`/`TiB` (all binary); nil for anything else, 0 and negatives.
    package static func size(_ text: String) -> Int64? {
        let value = text.trimmingWhitespace.lowercased()
        let multipliers: [String: Int64] = ["kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40]
        var number = Substring(value)
        var multiplier: Int64 = 1
        for (suffix, factor) in multipliers {
            let binary = suffix.prefix(1) + "ib"
            if value.hasSuffix(binary) {
                (number, multiplier) = (value.dropLast(3), factor)
            } else if value.hasSuffix(suffix) {
                (number, multiplier) = (value.dropLast(2), factor)
            }
        }
        // Python's int(), which the AWS CLI calls, takes spaces around the number.
        guard let whole = Int64(String(number).trimmingWhitespace), whole > 0 else { return nil }
        let (bytes, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    /// `text` as the AWS CLI reads a rate: a size followed by `B/s` (`50MB/s`, `800KB/s`), or
    /// bytes (`1000B/s`, which the AWS CLI itself fails to read); nil without `B/s`, as there.
    package static func rate(_ text: String) -> Int64? {
        let value = text.trimmingWhitespace
        guard value.hasSuffix("B/s") else { return nil }
        let size = value.dropLast(2)
        if size.dropLast().allSatisfy(\.isNumber) {
            return Int64(size.dropLast()).flatMap { $0 > 0 ? $0 : nil }
        }
        return Self.size(String(size))
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map(index(after:)) ?? start
        return self[start..<end]
    }
}

extension Substring {
    fileprivate var trimmingWhitespace: Substring { String(self).trimmingWhitespace }
}

extension S3Options {
    /// These options with `settings` (a profile's, `S3Configuration.transfer`) applied as the
    /// AWS CLI applies them, but for the settings in `kept`, which the caller set itself: the
    /// part size, the multipart threshold, the requests in flight and the bandwidth.
    public func applying(_ settings: S3TransferSettings, keeping kept: Set<S3TransferSettings.Setting> = []) -> S3Options {
        var options = self
        if !kept.contains(.multipartChunkSize), let size = settings.multipartChunkSize { options.partSize = size }
        if !kept.contains(.multipartThreshold), let threshold = settings.multipartThreshold { options.multipartThreshold = threshold }
        if !kept.contains(.maximumConcurrentRequests), let count = settings.maximumConcurrentRequests { options.concurrency = count }
        if !kept.contains(.maximumBandwidth), let rate = settings.maximumBandwidth {
            // Checked when the profile was read: 1 byte to 1 TiB per second.
            options.transfer.rateLimit = try? RateLimit(bytesPerSecond: rate)
            options.sourceRateLimit = try? RateLimit(bytesPerSecond: rate)
        }
        return options
    }
}
