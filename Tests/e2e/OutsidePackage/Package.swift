// swift-tools-version:6.0
// A package outside Sluice that depends on it by path, as a user's would (issue 39): built and
// run by Tests/e2e/test_outside_package.py against SeaweedFS.
import PackageDescription

// Sluice's checkout: three levels up from here, or SLUICE_ROOT. A path dependency's identity is
// its directory's name, whatever the clone is called.
let root =
    Context.environment["SLUICE_ROOT"]
    ?? Context.packageDirectory.split(separator: "/").dropLast(3).reduce("") { $0 + "/" + $1 }
let identity = String(root.split(separator: "/").last ?? "sluice").lowercased()

let package = Package(
    name: "OutsideApp",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: root)],
    targets: [.executableTarget(name: "OutsideApp", dependencies: [.product(name: "Sluice", package: identity)])]
)
