import Sluice
/// The subcommands `sluice` knows, by name. A new subcommand is one type conforming to
/// `Subcommand` (its own file) plus one line here.
enum Commands {
    static var all: [(name: String, type: any Subcommand.Type)] {
        [
            ("upload", UploadEntry.self),
            ("receive", ReceiveCommand.self),
            ("checksum", ChecksumCommand.self),
            ("tus", TusCommand.self),
            ("s3", S3Command.self),
            ("demo", DemoCommand.self),
        ]
    }
}

extension S3Command: Subcommand {}
