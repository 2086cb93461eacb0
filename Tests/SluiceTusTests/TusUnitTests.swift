import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// tus pieces that need no server: metadata, fingerprints, the state store.
struct TusUnitTests {
    @Test func encodesMetadataSortedInBase64() {
        #expect(
            TusClient.encodeMetadata(["filename": "a b.txt", "empty": "", "filetype": "text/plain"])
                == "empty,filename YSBiLnR4dA==,filetype dGV4dC9wbGFpbg==")
    }

    @Test func fingerprintSeesLengthEndsAndModificationTime() throws {
        let base = TusSource(SyntheticByteSource(length: 3 << 20, seed: 1), identity: "x", modificationTime: 10)
        let same = try TusFingerprint(of: base)
        #expect(try TusFingerprint(of: base).difference(from: same) == nil)
        let longer = TusSource(SyntheticByteSource(length: 3 << 20 + 1, seed: 1), identity: "x", modificationTime: 10)
        #expect(try TusFingerprint(of: longer).difference(from: same) != nil)
        let other = TusSource(SyntheticByteSource(length: 3 << 20, seed: 2), identity: "x", modificationTime: 10)
        #expect(try TusFingerprint(of: other).difference(from: same) != nil)
        let touched = TusSource(SyntheticByteSource(length: 3 << 20, seed: 1), identity: "x", modificationTime: 11)
        #expect(try TusFingerprint(of: touched).difference(from: same) != nil)
        // Smaller than a MiB: head and tail overlap, still fine.
        let tiny = TusSource(MemoryByteSource("tiny"), identity: "t")
        #expect(try TusFingerprint(of: tiny).length == 4)
    }

    @Test func stateStoreSavesLoadsAndRemoves() throws {
        let directory = try tusTemporaryDirectory("tus-unit-state") + "/nested"
        let store = TusStateStore(directory: directory)
        let fingerprint = try TusFingerprint(of: TusSource(MemoryByteSource("abc"), identity: "m"))
        let record = TusRecord(
            endpoint: "http://127.0.0.1:1/files/", identity: "m", uploadURL: "http://127.0.0.1:1/files/u1",
            fingerprint: fingerprint, createdAt: 1)
        #expect(try store.load(endpoint: record.endpoint, identity: "m") == nil)
        try store.save(record)
        #expect(try store.load(endpoint: record.endpoint, identity: "m") == record)
        // Another endpoint or identity has its own record.
        #expect(try store.load(endpoint: "http://127.0.0.1:2/files/", identity: "m") == nil)
        // No temporary files left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { $0.hasSuffix(".json") })
        #expect(store.remove(uploadURL: record.uploadURL) == 1)
        #expect(try store.load(endpoint: record.endpoint, identity: "m") == nil)
    }

}
