import Sluice

/// The commands `sluice` knows. A new command is one type conforming to `Subcommand` (its own
/// file, with its `CommandSpec`) plus one line here; its name is its specification's path.
enum Commands {
    static var all: [any Subcommand.Type] {
        [
            UploadEntry.self,
            ReceiveCommand.self,
            ChecksumCommand.self,
            TusCommand.self,
            S3Command.self,
            DemoCommand.self,
            HelpCommand.self,
            CompletionsCommand.self,
        ]
    }
}

extension S3Command: Subcommand {}
