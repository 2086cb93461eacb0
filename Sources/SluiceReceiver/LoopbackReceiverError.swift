import Sluice
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a loopback receiver could not start.
public enum LoopbackReceiverError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host is not a numeric IPv4 or IPv6 address (or `localhost`).
    case invalidHost(String)
    /// A socket call failed while setting up the listener.
    case socket(operation: String, address: String, errno: Int32)
    /// The store directory does not exist or is not a writable directory.
    case storeDirectory(path: String, errno: Int32)
    /// The receiver's threads could not be started.
    case thread(errno: Int32)

    public var description: String {
        switch self {
        case .invalidHost(let host):
            return "\(host): not a numeric IP address"
        case .socket(let operation, let address, let code):
            return "\(address): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .storeDirectory(let path, let code):
            return "\(path): cannot store uploads here: \(String(cString: strerror(code))) (errno \(code))"
        case .thread(let code):
            return "cannot start a thread: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}
