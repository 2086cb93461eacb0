import Foundation
import SluiceCLI

CommandLineTool.installSignalHandlers()
exit(await CommandLineTool.run(Array(CommandLine.arguments.dropFirst())))
