import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element: its local name, its text, its children in order.
///
/// S3's documents are small (at most 1,000 parts per `ListParts` page), so a tree is fine.
package struct S3XMLElement: Sendable, Equatable {
    package var name: String
    package var text: String
    package var children: [S3XMLElement]

    /// The first child called `name`.
    package func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child called `name`.
    package func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child called `name`, trimmed.
    package func value(_ name: String) -> String? { child(name).map { Self.trimmed($0.text) } }

    /// `text` less the white space at either end, as `trimmingCharacters(in: .whitespacesAndNewlines)`
    /// trims it; without Foundation's trip through UTF-16 when both ends are visible ASCII (which
    /// it cannot trim), the common case: that trip took a third of the CPU of listing a million
    /// objects (three values an object).
    package static func trimmed(_ text: String) -> String {
        func visibleASCII(_ byte: UInt8?) -> Bool { byte.map { $0 > 0x20 && $0 < 0x7F } ?? false }
        if visibleASCII(text.utf8.first), visibleASCII(text.utf8.last) { return text }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Parses a document with Foundation's `XMLParser` (no external entities, no DTDs).
    ///
    /// - Throws: `S3Error` with code `.malformedResponse`.
    package static func parse(_ data: Data, what: String) throws -> S3XMLElement {
        let delegate = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        guard parser.parse(), let root = delegate.root else {
            let reason = parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            let sample = String(decoding: data.prefix(120), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
            throw S3Error(.malformedResponse, "the server's \(what) answer is not XML S3 sends (\(reason)): \(sample)")
        }
        return root
    }

    /// Builds the tree; used by one parser on one thread.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        package var stack: [S3XMLElement] = []
        package var root: S3XMLElement?

        package func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            stack.append(S3XMLElement(name: elementName, text: "", children: []))
        }

        package func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        package func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        package func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard let element = stack.popLast() else { return }
            if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
        }
    }
}

/// Escapes text for an XML element's content.
package func s3XMLEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for character in text.unicodeScalars {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        case "\r": out += "&#13;"
        default: out.unicodeScalars.append(character)
        }
    }
    return out
}
