/// The one place a `Duration` becomes what an API below Sluice takes: seconds as a Double
/// (URLSession, condition waits, rates), or whole milliseconds or seconds (libcurl).
extension Duration {
    /// This duration in seconds: `self / .seconds(1)`; never traps.
    package var inSeconds: Double { self / .seconds(1) }

    /// Whole `unit`s, rounded up, at least 1, for a duration clamped to `0 ... limit`: what
    /// libcurl's integer timeouts take. Never traps, whatever the duration (a transport may
    /// be called without `UploadOptions.validate()`).
    package func wholeUnits(of unit: Duration, atMost limit: Duration = UploadOptions.maximumTimeout) -> Int {
        let bounded = Swift.min(Swift.max(self, .zero), limit)
        return Swift.max(1, Int((bounded / unit).rounded(.up)))
    }

    /// Exponential backoff: `base * 2^(attempt - 1)`, at most `maximum` (and at most
    /// `UploadOptions.maximumTimeout`); never overflows, so `Task.sleep(for:)` never traps.
    package static func backoff(base: Duration, maximum: Duration, attempt: Int) -> Duration {
        let cap = Swift.min(Swift.max(maximum, .zero), UploadOptions.maximumTimeout)
        var delay = Swift.min(Swift.max(base, .zero), cap)
        var doublings = Swift.min(attempt - 1, 128)
        while doublings > 0, delay < cap {
            delay = delay > cap / 2 ? cap : delay * 2
            doublings -= 1
        }
        return delay
    }
}
