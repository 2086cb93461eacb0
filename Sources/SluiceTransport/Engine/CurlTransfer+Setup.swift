#if canImport(CCurl)
import CCurl
import Foundation
import SluiceByteSources
import SluiceRequests

extension CurlTransfer {
    /// Methods that normally carry no body: with an empty body they send no `Content-Length`.
    package static let bodilessMethods: Set<String> = ["GET", "DELETE", "OPTIONS"]

    /// How long curl waits for `100 Continue` before sending the body anyway.
    ///
    /// Sluice keeps libcurl's `Expect: 100-continue` (sent for HTTP/1.1 bodies): a server that
    /// refuses the request (401, 413, 307) answers before a byte of the body goes out, which
    /// saves the body and lets a one-shot body be redirected or authenticated. Servers that
    /// ignore `Expect` cost this delay once per request instead of libcurl's 1 s. Pass an
    /// `Expect:` header of your own to change it, or turn `UploadOptions.expectsContinue` off
    /// (S3 does for bodies up to 2 MiB: the wait was a round trip per small object).
    package static let expectContinueTimeoutMilliseconds = 300

    /// The largest libcurl upload buffer Sluice asks for (libcurl accepts 16 KiB ... 2 MiB).
    ///
    /// 512 KiB: each fill of the buffer is one `send`, one wake-up of the server and one pass
    /// of the loop, and a signed aws-chunked body reads its chunks straight into it (eight
    /// 64 KiB chunks a fill, in a buffer rounded up to whole sections). Measured on this
    /// 2-core AMD EPYC (docs/performance.md, "libcurl's upload buffer"): 128 KiB is the one
    /// size that is slower than 64 KiB on loopback; 512 KiB is faster than both for a plain
    /// upload and cuts the CPU of a signed S3 job.
    package static let uploadBufferLimit = 512 << 10

    /// The largest libcurl receive buffer: answers here are S3's XML documents, tus's empty
    /// bodies and error pages, read up to a bound (`ResponseBodyHandling`).
    package static let receiveBufferLimit = 64 << 10

    /// Configures the easy handle for the first attempt (the loop adds it to its multi handle).
    package func configure() throws {
        let easy = try CurlEasy()
        onLoop.easy = easy
        let context = Unmanaged.passUnretained(self).toOpaque()

        try easy.set(SLUICE_CURLOPT_URL, string: request.url.absoluteString)
        // The path goes out as given, `.` and `..` segments and `//` included (libcurl would
        // remove dot segments): it may be signed (SigV4, presigned URLs) or name an S3 key,
        // which is opaque. Resolving a relative reference (a redirect) is where dot segments go.
        try easy.set(SLUICE_CURLOPT_PATH_AS_IS, true)
        try easy.set(SLUICE_CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        try easy.set(SLUICE_CURLOPT_NOSIGNAL, true)
        try easy.set(SLUICE_CURLOPT_TCP_NODELAY, true)
        try easy.set(SLUICE_CURLOPT_HTTP_VERSION, Int(SLUICE_CURL_HTTP_VERSION_2TLS))
        try easy.set(SLUICE_CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeout.wholeUnits(of: .milliseconds(1)))
        // Under 1 byte a second for a stall timeout ends the transfer; not for an answer kept
        // alive by a space every few seconds (`AnswerPace.checkSilence` ends silence there).
        if options.answerKeepAlive == nil {
            try easy.set(SLUICE_CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(SLUICE_CURLOPT_LOW_SPEED_TIME, options.stallTimeout.wholeUnits(of: .seconds(1)))
        }
        try easy.set(SLUICE_CURLOPT_EXPECT_100_TIMEOUT_MS, Self.expectContinueTimeoutMilliseconds)
        // Both of libcurl's buffers follow bufferSize, up to their limits: many transfers at
        // once (S3 parts) ask for small ones. A body shorter than that gets an upload buffer its
        // size: libcurl allocates the buffer for each handle, and one much larger than the body
        // only cost the allocator's page faults and trims (10,000 PutObjects of 16 KiB: 3 % of
        // the job's CPU with 512 KiB buffers).
        // A body in sections (signed aws-chunked) gets a buffer that whole sections fill, so
        // each fill takes them in place and none is left for a copy: eight 64 KiB chunks with
        // their header lines are 525,008 bytes, a little over 512 KiB.
        let curlBuffer = max(options.bufferSize, 16 << 10)
        let bodyBound = body.length.value.map { Int(clamping: max($0, 16 << 10)) } ?? Int.max
        var uploadBuffer = min(curlBuffer, Self.uploadBufferLimit)
        if uploadBuffer < bodyBound, case .random(let source, _) = body.storage, let sectioned = source as? any SectionedByteSource {
            uploadBuffer = sectioned.readSize(near: uploadBuffer)
        }
        try easy.set(SLUICE_CURLOPT_UPLOAD_BUFFERSIZE, min(uploadBuffer, bodyBound))
        try easy.set(SLUICE_CURLOPT_BUFFERSIZE, min(curlBuffer, Self.receiveBufferLimit))
        if let caFile = options.caFile { try easy.set(SLUICE_CURLOPT_CAINFO, string: caFile) }
        if options.insecure {
            try easy.set(SLUICE_CURLOPT_SSL_VERIFYPEER, false)
            try easy.set(SLUICE_CURLOPT_SSL_VERIFYHOST, false)
        }
        if let credentials = options.credentials {
            // Any scheme the server asks for; the first request goes without credentials, so
            // they are only sent where a challenge asks for them.
            try easy.set(SLUICE_CURLOPT_USERNAME, string: credentials.user)
            try easy.set(SLUICE_CURLOPT_PASSWORD, string: credentials.password)
            try easy.set(SLUICE_CURLOPT_HTTPAUTH, Int(SLUICE_CURLAUTH_ANY))
        }

        try setCallbacks(easy, context: context)
        onLoop.chunked = try setMethodAndBody(easy, context: context)
        try setHeaders(easy, chunked: onLoop.chunked)
    }

    /// Gives libcurl a data callback (`function`: write, header or read) and the `context` it
    /// is called with (`dataOption`: the matching `…DATA`).
    private func setDataCallback(
        _ easy: CurlEasy, _ dataOption: Int32, _ function: Int32, _ context: UnsafeMutableRawPointer,
        _ callback: sluice_curl_data_callback
    ) throws {
        try easy.set(dataOption, pointer: context)
        try check(sluice_curl_setopt_data_callback(easy.handle, function, callback))
    }

    private func setCallbacks(_ easy: CurlEasy, context: UnsafeMutableRawPointer) throws {
        try setDataCallback(easy, SLUICE_CURLOPT_WRITEDATA, SLUICE_CURLOPT_WRITEFUNCTION, context) { buffer, size, count, context in
            CurlTransfer.from(context).receiveBody(buffer, size * count)
        }
        try setDataCallback(easy, SLUICE_CURLOPT_HEADERDATA, SLUICE_CURLOPT_HEADERFUNCTION, context) { buffer, size, count, context in
            CurlTransfer.from(context).receiveHeader(buffer, size * count)
        }
        try easy.set(SLUICE_CURLOPT_XFERINFODATA, pointer: context)
        try check(
            sluice_curl_setopt_xferinfo_callback(easy.handle) { context, _, _, _, uploaded in
                CurlTransfer.from(context).reportProgress(uploaded)
            })
        try easy.set(SLUICE_CURLOPT_NOPROGRESS, false)
    }

    /// Sets the method, the framing and the body's reader.
    ///
    /// - Returns: Whether the body goes chunked.
    private func setMethodAndBody(_ easy: CurlEasy, context: UnsafeMutableRawPointer) throws -> Bool {
        let method = request.method
        let length = body.length
        if method == "HEAD" {
            guard length == .known(0) else {
                throw UploadError(.invalidOption, "a HEAD request cannot carry a body (\(length) bytes given)")
            }
            try easy.set(SLUICE_CURLOPT_NOBODY, true)
            return false
        }
        if length == .known(0), Self.bodilessMethods.contains(method) {
            if method != "GET" { try easy.set(SLUICE_CURLOPT_CUSTOMREQUEST, string: method) }
            return false
        }

        if case .random(let source, let start) = body.storage, source.length - start < Self.inlineBodyLimit,
            !options.forceChunked, options.rateLimit == nil
        {
            try sendInline(source, from: start, easy)
            return false
        }
        try easy.set(SLUICE_CURLOPT_UPLOAD, true)
        try easy.set(SLUICE_CURLOPT_CUSTOMREQUEST, string: method)
        let chunked = options.forceChunked || length.value == nil
        if let count = length.value, !chunked {
            try easy.set(SLUICE_CURLOPT_INFILESIZE_LARGE, offset: count)
        }
        try setDataCallback(easy, SLUICE_CURLOPT_READDATA, SLUICE_CURLOPT_READFUNCTION, context) { buffer, size, count, context in
            CurlTransfer.from(context).readBody(buffer, size * count)
        }
        try easy.set(SLUICE_CURLOPT_SEEKDATA, pointer: context)
        try check(
            sluice_curl_setopt_seek_callback(easy.handle) { context, offset, origin in
                CurlTransfer.from(context).seekBody(to: offset, origin: origin)
            })

        switch body.storage {
        case .random(let source, let start):
            onLoop.reader = .random(source, start: start, length: source.length - start)
        case .sequential(let source as FileDescriptorStream):
            // No producer thread and no ring: read straight into curl's buffer.
            onLoop.reader = .descriptor(source)
            Self.enlargePipe(source.fd)
        case .sequential(let source):
            startPipe(.sequential(source), length: length)
        case .stream(_, let make):
            startPipe(.stream(make), length: length)
        }
        return chunked
    }

    /// Random-access bodies shorter than this are read whole before the request and go out
    /// in the same write as its head: libcurl's `MAX_INITIAL_POST_SIZE`, below which a
    /// POSTFIELDS body joins the head. One write and one wake-up of the server per request
    /// instead of two: 10,000 PutObjects of 16 KiB took 7 % less CPU.
    package static let inlineBodyLimit: Int64 = 64 << 10

    /// Hands the rest of `source` from `start` to libcurl as the request's POSTFIELDS, the
    /// method kept (CUSTOMREQUEST) and no Content-Type of libcurl's own (`setHeaders`): a
    /// source whose bytes are pinned in memory as they are (a small file's snapshot), any
    /// other read into memory first. Rate-limited and chunked bodies never come here.
    ///
    /// - Throws: `UploadError.sourceFailed` as the read callback would: the source's error, or
    ///   a source that ends early.
    private func sendInline(_ source: any ByteSource, from start: Int64, _ easy: CurlEasy) throws {
        let count = Int(source.length - start)
        let pinned: PinnedByteSource
        if start == 0, let held = source as? PinnedByteSource {
            pinned = held
        } else {
            pinned = try PinnedByteSource(count: count) { memory in
                var read = 0
                while read < count {
                    let offset = start + Int64(read)
                    let got: Int
                    do {
                        got = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: memory[read...]), at: offset)
                    } catch {
                        throw UploadError.sourceFailed(error, at: offset, totalBytes: body.length.value)
                    }
                    guard got > 0 else { throw UploadError.sourceEndedEarly(at: offset, expected: source.length, totalBytes: body.length.value) }
                    read += got
                }
            }
        }
        onLoop.inlineBody = pinned
        try easy.set(SLUICE_CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(count))
        try easy.set(SLUICE_CURLOPT_POSTFIELDS, pointer: pinned.memory.baseAddress)
        try easy.set(SLUICE_CURLOPT_CUSTOMREQUEST, string: request.method)
        onLoop.reader = .random(source, start: start, length: Int64(count))
        onLoop.position = Int64(count)
    }

    /// The pipe buffer asked for a pipe body (stdin): 1 MiB, Linux's default ceiling for an
    /// unprivileged process (/proc/sys/fs/pipe-max-size).
    ///
    /// The default 64 KiB pipe holds one read of curl's buffer, so the writer (`cat FILE |`)
    /// and sluice take turns; with 1 MiB both run. Measured (`cat 1GiB | sluice upload - URL`
    /// against `cat 1GiB | curl -T - URL`, nginx `return 204`, 9 and 11 interleaved rounds, AMD
    /// EPYC, 2 cores): 0.97-1.07 with the default pipe, 0.73-0.85 with 1 MiB (curl given a
    /// 1 MiB pipe gains about as much: 0.89).
    package static let pipeBufferSize: Int32 = 1 << 20

    /// Asks for a `pipeBufferSize` buffer when `fd` is a pipe (best effort: an older kernel, a
    /// lower limit leave it as it is). Only ever grows it; anything but a pipe is left alone.
    package static func enlargePipe(_ fd: Int32) {
        #if os(Linux)
        let getPipeSize: Int32 = 1032, setPipeSize: Int32 = 1031  // F_GETPIPE_SZ, F_SETPIPE_SZ (<linux/fcntl.h>)
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
        let current = fcntl(fd, getPipeSize)
        if current >= 0, current < pipeBufferSize { _ = fcntl(fd, setPipeSize, pipeBufferSize) }
        #endif
    }

    private func startPipe(_ producer: CurlBodyPipe.Producer, length: BodyLength) {
        let pipe = CurlBodyPipe(capacity: options.bufferSize, length: length) { [weak self] in self?.wakeUp() }
        onLoop.reader = .pipe(pipe)
        pipe.start(producer)
    }

    /// The caller's headers for the current `url`, minus framing headers: Sluice alone decides
    /// `Content-Length` and `Transfer-Encoding`, so the two can never both be sent. Called
    /// again for each redirect: credential headers follow `UploadRequest.headers(for:options:)`.
    package func setHeaders(_ easy: CurlEasy, chunked: Bool) throws {
        var lines: [String] = []
        // Whether the request names these, seen here (none is a credential `headers(for:)`
        // leaves out), not looked up again: two lookups a request were a small file's 40 retains.
        var (namesExpect, namesContentType) = (false, false)
        for header in request.headers(for: onLoop.url, options: options) {
            let name = header.name.lowercased()
            if name == "content-length" || name == "transfer-encoding" { continue }
            if name == "expect" { namesExpect = true }
            if name == "content-type" { namesContentType = true }
            // "Name;" is libcurl's way to send a header with an empty value.
            lines.append(header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)")
        }
        // Over plain http libcurl speaks HTTP/1.1: ask for chunked framing explicitly (it would
        // choose it for an unknown length anyway). Over https HTTP/2 may be chosen, which has no
        // chunked framing; libcurl picks the right one there.
        if chunked, onLoop.url.scheme?.lowercased() == "http" { lines.append("Transfer-Encoding: chunked") }
        // "Name:" with nothing after it is libcurl's way to leave out a header of its own.
        if !options.expectsContinue, !namesExpect { lines.append("Expect:") }
        // A POSTFIELDS body would get libcurl's `application/x-www-form-urlencoded`.
        if onLoop.inlineBody != nil, !namesContentType { lines.append("Content-Type:") }
        var list: OpaquePointer?
        for line in lines {
            guard let longer = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw UploadError(.transport, "libcurl could not allocate a header list")
            }
            list = longer
        }
        try easy.set(SLUICE_CURLOPT_HTTPHEADER, pointer: list.map(UnsafeRawPointer.init))
        if let headerList = onLoop.headerList { curl_slist_free_all(headerList) }
        onLoop.headerList = list
    }

    private func check(_ code: Int32) throws {
        guard code == SLUICE_CURLE_OK else {
            throw UploadError(.transport, "libcurl rejected a callback: \(String(cString: curl_easy_strerror(code)))")
        }
    }

    package static func from(_ context: UnsafeMutableRawPointer?) -> CurlTransfer {
        Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    }
}
#endif
