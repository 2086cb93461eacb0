#if canImport(CCurl)
import CCurl
import Foundation
import SluiceRequests

/// One HTTP request of a remote source (a HEAD or a ranged GET) on one libcurl easy handle,
/// performed on the calling thread (`curl_easy_perform`): a source's own thread, never an
/// engine loop.
///
/// - Important: Not thread-safe: one thread makes it, performs it and reads its results.
///   The answer's headers are read up to `headerLimit`; a body reaches `body` only once
///   `accept` took the headers.
final class RemoteExchange {
    /// The most header bytes an answer may have (a server's answer is attacker-controlled).
    static let headerLimit = 64 << 10

    /// The status of the last answer (0 before one came).
    private(set) var status = 0
    /// The last answer's header fields, names lowercased (the last of a repeated name wins).
    private(set) var fields: [String: String] = [:]
    /// Whether the body goes to `body`; set by `accept` when the headers ended.
    private(set) var accepted = false
    /// What a callback stopped the transfer for (a refused answer, a stall, a close).
    var stopped: RemoteSourceError?

    /// Called once the headers of an answer ended: returns whether its body is wanted.
    var accept: (Int, [String: String]) -> Bool = { _, _ in false }
    /// A piece of the accepted body: returns false to stop the transfer.
    var body: (UnsafeRawBufferPointer) -> Bool = { _ in false }
    /// Called about once a second and after every piece: returns false to stop the transfer.
    var tick: () -> Bool = { true }

    private var headerBytes = 0
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(SLUICE_CURL_ERROR_SIZE))

    deinit { errorBuffer.deallocate() }

    /// Performs one request.
    ///
    /// - Parameters:
    ///   - easy: The handle (kept between requests, so its connection is reused).
    ///   - url: Where.
    ///   - head: A HEAD (no body) instead of a GET.
    ///   - headers: Every header line to send.
    ///   - options: TLS, timeouts.
    /// - Returns: libcurl's result code.
    func perform(_ easy: CurlEasy, url: URL, head: Bool, headers: [HTTPHeader], options: RemoteSourceOptions) throws -> Int32 {
        status = 0
        fields = [:]
        accepted = false
        stopped = nil
        headerBytes = 0
        errorBuffer[0] = 0
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(SLUICE_CURLOPT_URL, string: url.absoluteString)
        try easy.set(SLUICE_CURLOPT_PATH_AS_IS, true)
        try easy.set(SLUICE_CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        try easy.set(SLUICE_CURLOPT_NOSIGNAL, true)
        try easy.set(SLUICE_CURLOPT_TCP_NODELAY, true)
        try easy.set(SLUICE_CURLOPT_NOBODY, head)
        try easy.set(SLUICE_CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeout.wholeUnits(of: .milliseconds(1)))
        try easy.set(SLUICE_CURLOPT_BUFFERSIZE, 64 << 10)
        if let caFile = options.caFile { try easy.set(SLUICE_CURLOPT_CAINFO, string: caFile) }
        if options.insecure {
            try easy.set(SLUICE_CURLOPT_SSL_VERIFYPEER, false)
            try easy.set(SLUICE_CURLOPT_SSL_VERIFYHOST, false)
        }
        try easy.set(SLUICE_CURLOPT_WRITEDATA, pointer: context)
        _ = sluice_curl_setopt_data_callback(easy.handle, SLUICE_CURLOPT_WRITEFUNCTION) { buffer, size, count, context in
            Unmanaged<RemoteExchange>.fromOpaque(context!).takeUnretainedValue().receiveBody(buffer, size * count)
        }
        try easy.set(SLUICE_CURLOPT_HEADERDATA, pointer: context)
        _ = sluice_curl_setopt_data_callback(easy.handle, SLUICE_CURLOPT_HEADERFUNCTION) { buffer, size, count, context in
            Unmanaged<RemoteExchange>.fromOpaque(context!).takeUnretainedValue().receiveHeader(buffer, size * count)
        }
        try easy.set(SLUICE_CURLOPT_XFERINFODATA, pointer: context)
        _ = sluice_curl_setopt_xferinfo_callback(easy.handle) { context, _, _, _, _ in
            Unmanaged<RemoteExchange>.fromOpaque(context!).takeUnretainedValue().tick() ? 0 : 1
        }
        try easy.set(SLUICE_CURLOPT_NOPROGRESS, false)

        var list: OpaquePointer?
        for header in headers { list = curl_slist_append(list, "\(header.name): \(header.value)") }
        // libcurl adds none of its own that a source would mind; `Accept: */*` stays.
        defer { curl_slist_free_all(list) }
        try easy.set(SLUICE_CURLOPT_HTTPHEADER, pointer: UnsafeRawPointer(list))
        let code = curl_easy_perform(easy.handle)
        try easy.set(SLUICE_CURLOPT_HTTPHEADER, pointer: nil)
        return code
    }

    /// libcurl's message for the last failure, or its code's text.
    func failureText(_ code: Int32) -> String {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
    }

    private func receiveHeader(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer else { return 0 }
        headerBytes += count
        guard headerBytes <= Self.headerLimit else { return 0 }
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // A new answer (an interim 1xx, then the final one).
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            fields = [:]
            accepted = false
            return count
        }
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            if status >= 200 { accepted = accept(status, fields) }
            return count
        }
        if let colon = trimmed.firstIndex(of: ":") {
            let name = trimmed[..<colon].lowercased()
            fields[name] = HTTPHeader(name: name, value: String(trimmed[trimmed.index(after: colon)...])).value
        }
        return count
    }

    private func receiveBody(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer, count > 0 else { return 0 }
        // An answer not taken (a redirect, an error page): its body is not read.
        guard accepted else { return 0 }
        return body(UnsafeRawBufferPointer(start: buffer, count: count)) ? count : 0
    }
}
#endif
