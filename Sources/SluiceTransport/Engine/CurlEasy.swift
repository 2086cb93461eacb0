#if canImport(CCurl)
import CCurl
import SluiceRequests

/// libcurl's process-wide setup, run once before the first handle (thread-safe: a global
/// `let` is initialized exactly once).
package let curlGlobalInitialization: Int32 = curl_global_init(CLong(SLUICE_CURL_GLOBAL_ALL))

/// One libcurl easy handle with typed setters and getters.
///
/// - Important: Not thread-safe. One transfer owns it and uses it from its own thread;
///   `cleanup()` is called exactly once, by that owner.
package struct CurlEasy {
    package let handle: OpaquePointer

    /// - Throws: `UploadError.transport` when libcurl cannot be set up.
    package init() throws {
        guard curlGlobalInitialization == SLUICE_CURLE_OK else {
            throw UploadError(.transport, "libcurl failed to initialize (curl_global_init: \(curlGlobalInitialization))")
        }
        guard let handle = curl_easy_init() else {
            throw UploadError(.transport, "libcurl failed to create a handle (curl_easy_init)")
        }
        self.handle = handle
    }

    package func cleanup() {
        curl_easy_cleanup(handle)
    }

    package func set(_ option: Int32, _ value: Int) throws {
        try check(sluice_curl_setopt_long(handle, option, CLong(value)), option)
    }

    package func set(_ option: Int32, _ value: Bool) throws {
        try set(option, value ? 1 : 0)
    }

    package func set(_ option: Int32, offset value: Int64) throws {
        try check(sluice_curl_setopt_off_t(handle, option, value), option)
    }

    /// libcurl copies the string (every string option Sluice sets is copied).
    package func set(_ option: Int32, string value: String?) throws {
        guard let value else {
            try check(sluice_curl_setopt_pointer(handle, option, nil), option)
            return
        }
        try value.withCString { try check(sluice_curl_setopt_pointer(handle, option, $0), option) }
    }

    package func set(_ option: Int32, pointer value: UnsafeRawPointer?) throws {
        try check(sluice_curl_setopt_pointer(handle, option, value), option)
    }

    package func long(_ info: Int32) -> Int {
        var value: CLong = 0
        return sluice_curl_getinfo_long(handle, info, &value) == SLUICE_CURLE_OK ? Int(value) : 0
    }

    package func offset(_ info: Int32) -> Int64 {
        var value: sluice_curl_off_t = 0
        return sluice_curl_getinfo_off_t(handle, info, &value) == SLUICE_CURLE_OK ? value : 0
    }

    package func string(_ info: Int32) -> String? {
        var value: UnsafePointer<CChar>?
        guard sluice_curl_getinfo_string(handle, info, &value) == SLUICE_CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    private func check(_ code: Int32, _ option: Int32) throws {
        guard code == SLUICE_CURLE_OK else {
            throw UploadError(
                .transport, "libcurl rejected option \(option): \(String(cString: curl_easy_strerror(code)))",
                underlying: CurlError(code: code))
        }
    }
}
#endif
