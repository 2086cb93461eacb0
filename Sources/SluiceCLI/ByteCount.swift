import Sluice
/// Parses sizes such as `1048576`, `64MiB`, `2GB`, `1.5GiB`.
package enum ByteCount {
    /// Parses `text` as a byte count: bytes, or a number with B, KB, MB, GB, TB
    /// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024). Case-insensitive.
    ///
    /// - Throws: `UsageError` for anything else, negatives
    ///   and values that do not fit in 63 bits.
    package static func parse(_ text: String) throws(UsageError) -> Int64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digitsEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        let number = String(trimmed[..<digitsEnd])
        let unit = trimmed[digitsEnd...].lowercased()
        let multipliers: [String: Double] = [
            "": 1, "b": 1,
            "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
            "k": 1024, "m": 1_048_576, "g": 1_073_741_824, "t": 1_099_511_627_776,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard !number.isEmpty, let multiplier = multipliers[unit] else {
            throw UsageError("invalid size '\(text)': use bytes or a number with B, KB, MB, GB, TB, KiB, MiB, GiB, TiB")
        }
        if !number.contains("."), let whole = Int64(number) {
            let (product, overflow) = whole.multipliedReportingOverflow(by: Int64(multiplier))
            guard !overflow else { throw UsageError("invalid size '\(text)': too large") }
            return product
        }
        guard let value = Double(number), value.isFinite else {
            throw UsageError("invalid size '\(text)'")
        }
        let bytes = (value * multiplier).rounded()
        guard bytes < 9.2e18 else { throw UsageError("invalid size '\(text)': too large") }
        return Int64(bytes)
    }
}

import Foundation
