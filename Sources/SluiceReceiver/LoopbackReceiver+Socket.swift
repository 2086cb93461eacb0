import Sluice
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket and thread calls the loopback receiver makes, with Swift types and errors.
enum ReceiverSocket {
    /// What one `recv` produced.
    enum Received: Equatable {
        case bytes(Int)
        case closed
        case timedOut
        case failed(Int32)
    }

    #if os(Linux)
    private static let streamType = Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue)
    #else
    private static let streamType = SOCK_STREAM
    #endif

    /// A listening TCP socket on a numeric address.
    ///
    /// - Parameters:
    ///   - address: A numeric IPv4 or IPv6 address.
    ///   - port: The port, or 0 for one the kernel picks.
    /// - Returns: The socket and the port it is bound to.
    /// - Throws: `LoopbackReceiverError.invalidHost` or `.socket`.
    static func makeListener(address: String, port: UInt16) throws(LoopbackReceiverError) -> (fd: Int32, port: UInt16) {
        // A numeric address only (no lookup), of either family: the kernel's own parsing fills
        // the socket address, the port with it.
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address, String(port), &hints, &found) == 0, let info = found else { throw .invalidHost(address) }
        defer { freeaddrinfo(info) }
        let family = info.pointee.ai_family
        guard family == AF_INET || family == AF_INET6, let socketAddress = info.pointee.ai_addr else { throw .invalidHost(address) }
        let length = info.pointee.ai_addrlen

        let fd = socket(family, streamType, 0)
        guard fd >= 0 else { throw .socket(operation: "socket", address: address, errno: errno) }
        #if !os(Linux)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        #endif
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = bind(fd, socketAddress, length)
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw .socket(operation: "bind to port \(port)", address: address, errno: code)
        }
        guard listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw .socket(operation: "listen", address: address, errno: code)
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw .socket(operation: "getsockname", address: address, errno: code)
        }
        let boundPort = withUnsafeBytes(of: &actual) { raw -> UInt16 in
            family == AF_INET
                ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
                : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        }
        return (fd, boundPort)
    }

    /// Accepts one connection, close-on-exec, with `TCP_NODELAY` and a receive timeout.
    ///
    /// - Returns: The connection's descriptor, or nil when `accept` failed (the error is
    ///   transient for a listener: the caller polls again).
    static func accept(_ listener: Int32, idleTimeoutSeconds: Int) -> Int32? {
        #if os(Linux)
        // accept4 sets close-on-exec atomically, so a process spawned meanwhile by another
        // thread cannot inherit the connection; Glibc's Swift module does not declare it.
        let fd: Int32
        if let symbol = dlsym(nil, "accept4") {
            typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
            fd = unsafeBitCast(symbol, to: Accept4.self)(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
        } else {
            fd = Glibc.accept(listener, nil, nil)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        #else
        let fd = Darwin.accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        #endif
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if !os(Linux)
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var timeout = timeval(tv_sec: idleTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// One `recv`, `EINTR` retried.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .timedOut
            case let code: return .failed(code)
            }
        }
    }

    /// Sends all of `bytes` without raising `SIGPIPE`.
    ///
    /// - Returns: False when the peer is gone or the send timed out.
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        #if os(Linux)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        return bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let count = send(fd, raw.baseAddress! + sent, raw.count - sent, flags)
                if count > 0 {
                    sent += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Closes a connection after an error response without resetting it: stops sending, then
    /// reads and drops what the client still sends (at most `limit` bytes or until it goes
    /// quiet for the socket's receive timeout), so the client reads the response instead of a
    /// reset. Closes `fd`.
    static func lingeringClose(_ fd: Int32, limit: Int = 4 << 20, quietSeconds: Int = 1) {
        _ = shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: quietSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var drained = 0
        while drained < limit, case .bytes(let count) = receive(fd, into: buffer) { drained += count }
        close(fd)
    }

    /// A connected pair of local sockets, close-on-exec: one end wakes the other's `poll`.
    static func wakePair() throws(LoopbackReceiverError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        let result = socketpair(AF_UNIX, streamType, 0, &fds)
        guard result == 0 else { throw .socket(operation: "socketpair", address: "-", errno: errno) }
        #if !os(Linux)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        #endif
        return (fds[0], fds[1])
    }
}

/// Joinable POSIX threads for the receiver (Foundation's `Thread` cannot be joined).
enum ReceiverThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts a joinable thread running `body`.
    ///
    /// - Throws: `LoopbackReceiverError.thread` when the system refuses.
    static func spawn(_ body: @escaping @Sendable () -> Void) throws(LoopbackReceiverError) -> pthread_t {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        #if os(Linux)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let result = pthread_create(
            &thread, nil,
            { argument in
                Unmanaged<Body>.fromOpaque(threadArgument(argument)).takeRetainedValue().run()
                return nil
            }, box)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw .thread(errno: result)
        }
        #if os(Linux)
        return thread
        #else
        return thread!
        #endif
    }

    /// Names the calling thread (at most 15 bytes shown), for debuggers and for tests that
    /// check no receiver thread is left. Linux only; elsewhere it does nothing.
    static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
        _ = close(fd)
        #endif
    }

    /// Waits for `thread` to end.
    static func join(_ thread: pthread_t) {
        _ = pthread_join(thread, nil)
    }
}

/// A thread start routine's argument, which `ReceiverThread.spawn` always passes. (Optional on
/// Linux and not on Darwin: this takes either.)
private func threadArgument(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer {
    guard let argument else { fatalError("pthread_create passed no argument") }
    return argument
}
