import Foundation
import Sluice

// OutsideApp FILE DIRECTORY s3://BUCKET/PREFIX/: the file to PREFIX/file/, the directory to
// PREFIX/tree/, one call each, with a client configured as the AWS CLI is. Prints what the calls
// returned as one JSON line.
let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: OutsideApp FILE DIRECTORY s3://BUCKET/PREFIX/\n".utf8))
    exit(2)
}
do {
    let client = try S3Client()
    let file = try await client.upload(file: arguments[1], to: arguments[3] + "file/")
    let tree = try await client.upload(directory: arguments[2], to: arguments[3] + "tree/")
    let report: [String: Any] = [
        "key": file.location.key, "eTag": file.eTag, "parts": file.partCount,
        "checksumAlgorithm": file.checksum?.algorithm.s3Name ?? "", "checksumType": file.checksum?.type.name ?? "",
        "uploaded": tree.uploaded, "failures": tree.failures.count,
    ]
    print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
} catch {
    FileHandle.standardError.write(Data("OutsideApp: \(error)\n".utf8))
    exit(1)
}
