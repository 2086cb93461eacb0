import Foundation
import Testing
@testable import Sluice
@testable import SluicePrimitives
import SluiceTestSupport

/// `RecordLock`: one run per record; a second is refused at once naming the holder's pid; the
/// lock dies with its process.
struct RecordLockTests {
    func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "sluice-lock-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aSecondHolderIsRefusedAtOnceNamingThePid() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let record = directory + "/r.json"
        let first = try RecordLock.acquire(record)
        #expect(throws: RecordLockError(record: record, problem: .held(pid: getpid()))) { try RecordLock.acquire(record) }
        #expect("\(RecordLockError(record: record, problem: .held(pid: 42)))".contains("sluice pid 42"))
        first.release()
        #expect(!FileManager.default.fileExists(atPath: record + ".lock"))
        let second = try RecordLock.acquire(record)
        second.release()
        second.release()
    }

    /// A lock file left by a run that died (its pid still written in it) is taken over.
    @Test func aLockFileLeftBehindIsTakenOver() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let record = directory + "/r.json"
        try Data("999999\n".utf8).write(to: URL(fileURLWithPath: record + ".lock"))
        let lock = try RecordLock.acquire(record)
        #expect(try String(contentsOfFile: record + ".lock", encoding: .utf8) == "\(getpid())\n")
        lock.release()
    }

    static let killedRecord = ProcessInfo.processInfo.environment["SLUICE_LOCK_RECORD"] ?? ""

    /// The child: takes the lock, says so, and dies by SIGKILL holding it.
    @Test(.enabled(if: Isolated.isChild("lockKilledChild")))
    func lockKilledChild() throws {
        let lock = try RecordLock.acquire(Self.killedRecord)
        withExtendedLifetime(lock) { _ = kill(getpid(), SIGKILL) }
    }

    @Test(.enabled(if: !Isolated.inChild))
    func theLockDiesWithItsProcess() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let record = directory + "/r.json"
        setenv("SLUICE_LOCK_RECORD", record, 1)
        let (status, output) = try await Isolated.run("lockKilledChild")
        #expect(status == SIGKILL, "\(output.suffix(500))")
        #expect(FileManager.default.fileExists(atPath: record + ".lock"))
        let lock = try RecordLock.acquire(record)
        lock.release()
    }
}
