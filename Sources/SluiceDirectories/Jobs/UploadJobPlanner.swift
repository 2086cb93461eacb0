/// Decides, file by file in the walk's order (the order of their keys), which files of an
/// `UploadJob` are sent: `s3 sync` sends those whose object its listing shows missing or
/// different (`S3SyncPlanner`).
public protocol UploadJobPlanner: Sendable {
    /// Whether `file` is sent as `name`.
    ///
    /// - Important: Called once for each file the job's filter takes, in walk order, one call
    ///   at a time, before the job counts the file.
    /// - Throws: When the decision cannot be made (a listing that failed): the job stops.
    func shouldSend(_ file: WalkedFile, as name: String) async throws -> Bool
}
