// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Sluice",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        // The library: sources, streams, transports, the engine, uploads and protocols.
        .library(name: "Sluice", targets: ["Sluice"]),
        // A loopback HTTP sink that hashes what it receives: for tests, demos and `sluice receive`.
        .library(name: "SluiceReceiver", targets: ["SluiceReceiver"]),
        .executable(name: "sluice", targets: ["sluice"]),
    ],
    targets: [
        // The few libcurl functions Sluice calls, declared by hand: the system has
        // libcurl.so.4 but not its headers.
        .target(
            name: "CCurl",
            linkerSettings: [.linkedLibrary(":libcurl.so.4", .when(platforms: [.linux]))]
        ),
        // SHA-1/SHA-256 from the system's OpenSSL libcrypto (libssl-dev). Compiled optimized in
        // every configuration: the interleaved SHA-256 pair runs only in optimized code, and the
        // test suite (a debug build) must run the code that ships.
        .target(
            name: "CSluiceCrypto",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("crypto", .when(platforms: [.linux]))]
        ),
        // The floors, bottom up: each imports only those below it (ARCHITECTURE.md).
        // Primitives: locks, system calls, the blocking pool, durable records, digests.
        .target(
            name: "SluicePrimitives",
            dependencies: [.target(name: "CSluiceCrypto", condition: .when(platforms: [.linux]))],
            swiftSettings: strict
        ),
        // Byte sources: a length and reads at an offset (files, memory, synthetic, slices), their
        // digests and checksums.
        .target(
            name: "SluiceByteSources",
            dependencies: ["SluicePrimitives", .target(name: "CSluiceCrypto", condition: .when(platforms: [.linux]))],
            swiftSettings: strict
        ),
        // Requests: what an upload is (request, body, options, response, errors, rate limits).
        .target(name: "SluiceRequests", dependencies: ["SluicePrimitives", "SluiceByteSources"], swiftSettings: strict),
        // The seed's technique: a bound stream pair over one ring, and the pump that fills it.
        .target(name: "SluiceBoundStreams", dependencies: ["SluicePrimitives", "SluiceByteSources", "SluiceRequests"], swiftSettings: strict),
        // Transport: the libcurl engine and its loops, the curl and URLSession transports, the part
        // scheduler, retry policy and request budget, and Uploader, the async front door.
        .target(
            name: "SluiceTransport",
            dependencies: [
                "SluicePrimitives", "SluiceByteSources", "SluiceRequests", "SluiceBoundStreams",
                .target(name: "CCurl", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strict
        ),
        // multipart/form-data bodies streamed from byte sources.
        .target(name: "SluiceMultipart", dependencies: ["SluicePrimitives", "SluiceByteSources", "SluiceRequests"], swiftSettings: strict),
        // tus 1.0 resumable uploads, one or parallel.
        .target(name: "SluiceTus", dependencies: ["SluicePrimitives", "SluiceByteSources", "SluiceRequests", "SluiceBoundStreams", "SluiceTransport"], swiftSettings: strict),
        // S3: SigV4 signing, aws-chunked bodies, the S3 client (objects, multipart, lists,
        // deletes, presigned parts) and its configuration.
        .target(
            name: "SluiceS3",
            dependencies: [
                "SluicePrimitives", "SluiceByteSources", "SluiceRequests", "SluiceBoundStreams", "SluiceTransport",
                .target(name: "CSluiceCrypto", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strict
        ),
        // The wing for directories: walk, order, filters, the job and its record, S3 sync.
        .target(name: "SluiceDirectories", dependencies: ["SluicePrimitives", "SluiceByteSources", "SluiceRequests", "SluiceBoundStreams", "SluiceTransport", "SluiceS3"], swiftSettings: strict),
        // What users import: every floor, re-exported (Sources/Sluice/Exports.swift), and the
        // DocC catalog.
        .target(
            name: "Sluice",
            dependencies: [
                "SluicePrimitives",
                "SluiceByteSources",
                "SluiceRequests",
                "SluiceBoundStreams",
                "SluiceTransport",
                "SluiceMultipart",
                "SluiceTus",
                "SluiceS3",
                "SluiceDirectories",
            ],
            swiftSettings: strict
        ),
        .target(name: "SluiceReceiver", dependencies: ["Sluice"], swiftSettings: strict),
        // The command line: argument parsing, source specifications, curl's -F syntax,
        // messages and summaries. Everything the `sluice` executable does but `main`.
        .target(name: "SluiceCLI", dependencies: ["Sluice", "SluiceReceiver"], swiftSettings: strict),
        .executableTarget(name: "sluice", dependencies: ["SluiceCLI"], swiftSettings: strict),
        // Helpers every test target shares: peers started by PID, temporary directories, faulty
        // and changing sources, the settle and patience loops. A regular target (no @testable),
        // so it builds with the package in any configuration.
        .target(name: "SluiceTestSupport", dependencies: ["Sluice", "SluiceReceiver"], path: "Tests/SluiceTestSupport", swiftSettings: strict),
        // One test target per module, each beside what it tests (ARCHITECTURE.md).
        .testTarget(name: "SluicePrimitivesTests", dependencies: ["SluicePrimitives", "Sluice", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceByteSourcesTests", dependencies: ["SluiceByteSources", "Sluice", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceRequestsTests", dependencies: ["SluiceRequests", "Sluice", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceBoundStreamsTests", dependencies: ["SluiceBoundStreams", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceTransportTests", dependencies: ["SluiceTransport", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceMultipartTests", dependencies: ["SluiceMultipart", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceTusTests", dependencies: ["SluiceTus", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceS3Tests", dependencies: ["SluiceS3", "Sluice", "SluiceReceiver", "SluiceTestSupport", .target(name: "CSluiceCrypto", condition: .when(platforms: [.linux]))], swiftSettings: strict),
        .testTarget(name: "SluiceDirectoriesTests", dependencies: ["SluiceDirectories", "SluiceS3", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceReceiverTests", dependencies: ["SluiceReceiver", "Sluice", "SluiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "SluiceCLITests", dependencies: ["SluiceCLI", "Sluice", "SluiceReceiver", "SluiceTestSupport"], swiftSettings: strict),
        // The package as a whole: its layering against ARCHITECTURE.md, what `import Sluice` offers.
        .testTarget(name: "SluiceTests", dependencies: ["Sluice", "SluiceTestSupport"], swiftSettings: strict),
        // Benchmark peer: plain URLSession with no Sluice code (Benchmarks/upload.sh).
        .executableTarget(name: "urlsession-baseline", path: "Benchmarks/URLSessionBaseline", swiftSettings: strict),
        // Benchmark driver for Benchmarks/sigv4.sh (signed uploads, CRC32C and SHA-256 throughput).
        .executableTarget(
            name: "sigv4-bench",
            dependencies: ["Sluice", .target(name: "CSluiceCrypto", condition: .when(platforms: [.linux]))],
            path: "Benchmarks/SigV4Bench", swiftSettings: strict
        ),
        // Benchmark driver for the transfer engine (Benchmarks/engine.sh).
        .executableTarget(name: "engine-bench", dependencies: ["Sluice", "SluiceCLI"], path: "Benchmarks/EngineBench", swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
