// The peer Sluice is measured against: plain URLSession, the way an app would use it, with no
// Sluice code. Not part of the library.
//
//   urlsession-baseline stream|file PATH URL
//     stream: httpBodyStream = InputStream(fileAtPath:) on a streamed upload task
//     file:   uploadTask(with:fromFile:)
// Prints the status and the response body; exits 0 for a 2xx.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the session's serial delegate queue is the only caller.
    let path: String
    var body = Data()
    let done = DispatchSemaphore(value: 0)
    var failure: (any Error)?

    init(path: String) { self.path = path }

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        completionHandler(InputStream(fileAtPath: path))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        body.append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        failure = error
        done.signal()
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, ["stream", "file"].contains(arguments[1]), let url = URL(string: arguments[3]) else {
    FileHandle.standardError.write(Data("usage: urlsession-baseline stream|file PATH URL\n".utf8))
    exit(2)
}
let path = arguments[2]
var request = URLRequest(url: url)
request.httpMethod = "PUT"
let delegate = Delegate(path: path)
let queue = OperationQueue()
queue.maxConcurrentOperationCount = 1
let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: queue)
let task: URLSessionTask
if arguments[1] == "stream" {
    task = session.uploadTask(withStreamedRequest: request)
} else {
    task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: path))
}
task.resume()
delegate.done.wait()
let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
if let failure = delegate.failure {
    FileHandle.standardError.write(Data("urlsession-baseline: \(failure)\n".utf8))
    exit(1)
}
print("status \(status) \(String(decoding: delegate.body, as: UTF8.self))")
exit((200..<300).contains(status) ? 0 : 1)
