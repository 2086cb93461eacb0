#if canImport(CCurl)
import CCurl
import Foundation
import SluiceRequests
import SluiceByteSources

extension CurlTransfer {
    /// Turns a failed attempt into one `UploadError` line with bytes sent and the cause.
    package func error(for code: Int32, bytesSent: Int64) -> UploadError {
        let total = body.length.value
        // An interim answer (100 Continue) is no status: the server's answer never came.
        let status = onLoop.easy.map { $0.long(SLUICE_CURLINFO_RESPONSE_CODE) }.flatMap { $0 >= 200 ? $0 : nil }
        if var failure = onLoop.failure {
            failure.status = failure.status ?? status
            // libcurl's count restarts when it rewinds for a replay: the bytes that went out before count.
            failure.bytesSent = max(failure.bytesSent ?? 0, bytesSent)
            failure.totalBytes = failure.totalBytes ?? total
            return failure
        }
        if isCancelled { return cancelledError() }

        let detail = errorText(code)
        let target = onLoop.url.hostAndPort
        // The typed code is the CURLcode's (`CurlError.uploadErrorCode`), what the retry policy
        // reads; the message says it in words for this transfer.
        func make(_ message: String) -> UploadError {
            UploadError(
                CurlError(code: code).uploadErrorCode, message, status: status, bytesSent: bytesSent, totalBytes: total,
                underlying: CurlError(code: code))
        }
        if CurlError(code: code).isTLS { return make("TLS with \(target) failed: \(detail)") }
        switch code {
        case SLUICE_CURLE_COULDNT_CONNECT:
            if onLoop.easy?.long(SLUICE_CURLINFO_OS_ERRNO) == Int(ECONNREFUSED) {
                return make("connection refused to \(target)")
            }
            return make("could not connect to \(target): \(detail)")
        case SLUICE_CURLE_COULDNT_RESOLVE_HOST, SLUICE_CURLE_COULDNT_RESOLVE_PROXY:
            return make("could not resolve \(onLoop.url.bracketedHost ?? "?"): \(detail)")
        case SLUICE_CURLE_SEND_ERROR:
            return make("connection to \(target) broke while sending: \(detail)")
        case SLUICE_CURLE_RECV_ERROR, SLUICE_CURLE_PARTIAL_FILE, SLUICE_CURLE_HTTP2, SLUICE_CURLE_HTTP2_STREAM:
            return make("connection to \(target) broke: \(detail)")
        case SLUICE_CURLE_GOT_NOTHING:
            return make("\(target) closed the connection without answering")
        case SLUICE_CURLE_OPERATION_TIMEDOUT:
            if onLoop.paused,
                onLoop.pausedDescriptor != nil
                    || {
                        if case .pipe(let pipe) = onLoop.reader { return !pipe.isReadable }; return false
                    }()
            {
                // libcurl's stall clock ran while the transfer waited for the producer: the
                // source, not the server, went quiet.
                let seconds = options.stallTimeout.wholeUnits(of: .seconds(1))
                return UploadError(
                    .timedOut, "the source produced nothing for \(seconds) s (stall timeout; the server at \(target) was waiting)",
                    status: status, bytesSent: bytesSent, totalBytes: total, underlying: CurlError(code: code))
            }
            return make("timed out talking to \(target): \(detail)")
        case SLUICE_CURLE_TOO_MANY_REDIRECTS:
            return make("too many redirects: \(detail)")
        case SLUICE_CURLE_SEND_FAIL_REWIND:
            return make("the server asked for the body again and it cannot be replayed: \(detail)")
        case SLUICE_CURLE_ABORTED_BY_CALLBACK:
            return make("the upload was aborted: \(detail)")
        case SLUICE_CURLE_UNSUPPORTED_PROTOCOL, SLUICE_CURLE_URL_MALFORMAT:
            return make("libcurl cannot use \(onLoop.url.absoluteString): \(detail)")
        case SLUICE_CURLE_WEIRD_SERVER_REPLY:
            return make("\(target) sent a malformed answer: \(detail)")
        default:
            return make("libcurl error \(code) with \(target): \(detail)")
        }
    }

    /// The error buffer's text, else libcurl's name for `code`; on one line.
    private func errorText(_ code: Int32) -> String {
        var text = String(cString: errorBuffer)
        if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
#endif

extension CurlError {
    /// The typed code of an upload libcurl ended with this code: the connection's failures
    /// (refused, unresolved, reset, nothing answered, timed out) apart from the request's, so
    /// that the retry policy reads a typed code and never a CURLcode. Every code of
    /// `transientCodes` maps to a code `RetryPolicy.isTransient` retries.
    package var uploadErrorCode: UploadError.Code {
        if isTLS { return .tls }
        switch code {
        case SLUICE_CURLE_COULDNT_CONNECT, SLUICE_CURLE_COULDNT_RESOLVE_HOST, SLUICE_CURLE_COULDNT_RESOLVE_PROXY: return .connectionFailed
        case SLUICE_CURLE_SEND_ERROR, SLUICE_CURLE_RECV_ERROR, SLUICE_CURLE_PARTIAL_FILE, SLUICE_CURLE_HTTP2, SLUICE_CURLE_HTTP2_STREAM:
            return .connectionReset
        case SLUICE_CURLE_GOT_NOTHING: return .noResponse
        case SLUICE_CURLE_OPERATION_TIMEDOUT: return .timedOut
        case SLUICE_CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects
        case SLUICE_CURLE_SEND_FAIL_REWIND: return .notReplayable
        case SLUICE_CURLE_ABORTED_BY_CALLBACK: return .cancelled
        case SLUICE_CURLE_UNSUPPORTED_PROTOCOL, SLUICE_CURLE_URL_MALFORMAT: return .invalidURL
        case SLUICE_CURLE_WEIRD_SERVER_REPLY: return .protocolViolation
        default: return .transport
        }
    }
}
