import Sluice
struct ReceiveCommand {
    init(arguments: [String]) throws {}
    func run() async throws -> Int32 { Terminal.error("sluice: receive is not built yet"); return 1 }
}
