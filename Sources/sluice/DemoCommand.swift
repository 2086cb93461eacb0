import Sluice
struct DemoCommand {
    init(arguments: [String]) throws {}
    func run() async throws -> Int32 { Terminal.error("sluice: demo is not built yet"); return 1 }
}
