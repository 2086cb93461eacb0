import SluiceS3

/// The files of an `UploadJob` in the order of their keys: a walk of its root, or the files of
/// its list (`UploadJob.list`, `--files-from`).
package struct JobFiles: Sendable {
    /// The root's absolute path.
    package let root: String
    private var source: Source

    private enum Source: Sendable {
        case walk(DirectoryWalk)
        case list(PathList.Files)
    }

    /// The files of `job`, in `order`.
    ///
    /// - Throws: `WalkIssue` when the root cannot be walked; `PathListError` when the list
    ///   cannot be sorted in `order`.
    package init(_ job: UploadJob, order: KeyOrder) throws {
        if let list = job.list {
            root = list.root
            source = .list(try list.files(in: order))
        } else {
            var walk = try DirectoryWalk(
                root: job.root, followsSymlinks: job.followsSymlinks, order: order, spill: job.directorySpill)
            walk.walked = job.walkedDirectories
            // The state directory inside the tree is never part of it (its journal, its locks).
            walk.skipped = job.skippedDirectories
            root = walk.root
            source = .walk(walk)
        }
    }

    /// The root `init` would walk, checked as `init` checks it (a root that is not a directory
    /// or cannot be opened throws the same `WalkIssue`) without listing it: a job's walk lists it.
    package static func root(of job: UploadJob) throws -> String {
        if let list = job.list { return list.root }
        try DirectoryWalk.checkRoot(job.root)
        return DirectoryWalk.absolutePath(job.root)
    }

    /// The next file or issue; nil at the end.
    package mutating func next() -> WalkEntry? {
        switch source {
        case .walk(var walk):
            defer { source = .walk(walk) }
            return walk.next()
        case .list(let files):
            return files.next()
        }
    }
}
