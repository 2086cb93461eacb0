import Foundation
import SluicePrimitives

/// A file's content type guessed from its name as the AWS CLI guesses it: `aws s3 cp` calls
/// Python's `mimetypes.guess_type` on the file's absolute path and sends the type it gets.
///
/// The table is Python 3.11's own (the strict one), then every `mime.types` file Python reads
/// where it is present (`knownFiles`: `/etc/mime.types` on Debian), each line overriding what
/// came before, as `mimetypes.init` does. `system` reads them once a process, each up to
/// `fileLimit` bytes (a larger file, or one that is not UTF-8, is left out). The rules are
/// Python's: `.tgz` is `.tar.gz`, the encodings (`.gz`, `.Z`, `.bz2`, `.xz`, `.br`, case
/// sensitive) are taken off before the type's extension, which is compared lower-cased; leading
/// dots are not an extension (`.bashrc` has none); `x.tar.gz` is `application/x-tar` (its
/// encoding, gzip, is not a content type).
public struct MediaTypeTable: Sendable {
    /// Extension (with its dot, as the file wrote it) to type.
    private var types: [String: String] = [:]

    /// The files Python's `mimetypes` reads, in its order (`mimetypes.knownfiles`).
    public static let knownFiles = [
        "/etc/mime.types", "/etc/httpd/mime.types", "/etc/httpd/conf/mime.types", "/etc/apache/mime.types",
        "/etc/apache2/mime.types", "/usr/local/etc/httpd/conf/mime.types", "/usr/local/lib/netscape/mime.types",
        "/usr/local/etc/mime.types",
    ]
    /// The most bytes a `mime.types` file is read to (Debian's is 74 KB).
    public static let fileLimit = 1 << 20
    /// Python's table and the `knownFiles` present, read the first time it is used.
    public static let system = MediaTypeTable(files: knownFiles)

    /// Python's table, then each of `files` that is present (a regular file of at most
    /// `fileLimit` bytes of UTF-8), in order.
    public init(files: [String]) {
        read(Self.pythonTable)
        for path in files {
            guard let bytes = try? SmallFile.read(path, limit: Self.fileLimit), let text = String(bytes: bytes, encoding: .utf8) else { continue }
            read(text)
        }
    }

    /// The type the AWS CLI sends for the file at `path`, or nil: Python's
    /// `mimetypes.guess_type(os.path.abspath(path))[0]`. Only the absolute path's last name
    /// counts (an absolute path has no URL scheme, so `data:x,y` is a file name here).
    public func contentType(forPath path: String) -> String? {
        // A path whose last name is a name (not empty, `.` or `..`), as every walked file's
        // is: that name is what the normalization below ends with.
        let last = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[path.utf8.index(after: $0)...] } ?? path[...]
        if !last.isEmpty, last != ".", last != ".." { return type(ofName: last) }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        // posixpath.normpath: empty and `.` names dropped, `..` takes the one before it away.
        var names: [Substring.UnicodeScalarView] = []
        for name in absolute.unicodeScalars.split(separator: "/") where !name.elementsEqual(".".unicodeScalars) {
            if name.elementsEqual("..".unicodeScalars) { _ = names.popLast() } else { names.append(name) }
        }
        guard let name = names.last else { return nil }
        return guessType("/" + Self.string(name))
    }

    /// The type of a file named `name` (no `/`), as `guessType("/" + name)` gives it (no scheme
    /// can start with `/`): the extension looked up at once, without the scalar arrays, where no
    /// suffix or encoding rule applies to it (a job asks once a file).
    private func type(ofName name: Substring) -> String? {
        let bytes = name.utf8
        // `splitExtension`'s rule: a `.` after the name's first byte, with a byte other than `.` before it.
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot != bytes.startIndex,
            bytes[..<dot].contains(where: { $0 != UInt8(ascii: ".") })
        else { return nil }
        let ext = String(name[dot...])
        let lowered = ext.lowercased()
        if Self.suffixMap[lowered] != nil || Self.encodings.contains(ext) { return guessType("/" + name) }
        return types[lowered]
    }

    /// Python's `mimetypes.guess_type(url)[0]` with this table: a `scheme:` prefix (no `/`
    /// before the colon) is taken off, and a `data:` URL gives its own type.
    public func guessType(_ url: String) -> String? {
        var text = Array(url.unicodeScalars)[...]
        // urllib.parse._splittype: `[^/:]+:` at the start is a scheme.
        if let colon = text.firstIndex(where: { $0 == ":" || $0 == "/" }), text[colon] == ":", colon > text.startIndex {
            let scheme = Self.string(text[..<colon]).lowercased()
            text = text[(colon + 1)...]
            if scheme == "data" { return Self.dataURLType(text) }
        }
        var (base, ext) = Self.splitExtension(text)
        while let replaced = Self.suffixMap[Self.string(ext).lowercased()] {
            (base, ext) = Self.splitExtension(base + Array(replaced.unicodeScalars))
        }
        if Self.encodings.contains(Self.string(ext)) {
            ext = Self.splitExtension(base).extension
        }
        return types[Self.string(ext).lowercased()]
    }

    /// Reads `text` as a `mime.types` file (`type ext ext ...`, `#` to the line's end), as
    /// Python's `MimeTypes.readfp`: a later line's extension replaces an earlier one's.
    ///
    /// An ASCII line is split by its bytes; a line with other scalars by them (Python's spaces
    /// beyond ASCII): the same words. The scalar split alone took 15 ms of every run that
    /// guesses types, a run of small files' 1.4 % (issue 37.11).
    private mutating func read(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            for line in bytes.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
                if line.allSatisfy({ $0 < 0x80 }) {
                    read(
                        words: line.split(whereSeparator: { (0x09...0x0D).contains($0) || (0x1C...0x20).contains($0) })
                            .map { String(decoding: UnsafeBufferPointer(rebasing: $0), as: UTF8.self) })
                } else {
                    let scalars = String(decoding: UnsafeBufferPointer(rebasing: line), as: UTF8.self).unicodeScalars
                    read(words: scalars.split(whereSeparator: Self.isPythonSpace).map(Self.string))
                }
            }
        }
    }

    /// One line's words: its type, then its extensions, up to a word that begins with `#`.
    private mutating func read(words: [String]) {
        var words = words
        if let comment = words.firstIndex(where: { $0.hasPrefix("#") }) { words.removeSubrange(comment...) }
        // A type that is not one header token (bytes outside printable ASCII) is left out.
        guard let type = words.first, type.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return }
        for suffix in words.dropFirst() { types["." + suffix] = type }
    }

    /// Python's `posixpath.splitext`: the extension is from the last `.` after the last `/`,
    /// unless only dots come before it in the name.
    private static func splitExtension(_ path: ArraySlice<Unicode.Scalar>) -> (base: ArraySlice<Unicode.Scalar>, extension: ArraySlice<Unicode.Scalar>) {
        let nameStart = (path.lastIndex(of: "/") ?? path.startIndex - 1) + 1
        if let dot = path.lastIndex(of: "."), dot > nameStart, path[nameStart..<dot].contains(where: { $0 != "." }) {
            return (path[..<dot], path[dot...])
        }
        return (path, [])
    }

    /// The type of a `data:` URL (what follows the scheme), as Python's `guess_type`.
    private static func dataURLType(_ text: ArraySlice<Unicode.Scalar>) -> String? {
        guard let comma = text.firstIndex(of: ",") else { return nil }
        let type = string(text[..<(text[..<comma].firstIndex(of: ";") ?? comma)])
        return type.contains("=") || !type.contains("/") ? "text/plain" : type
    }

    private static func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    /// Python's `str.isspace` (what `str.split()` splits at).
    private static func isPythonSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// `mimetypes.suffix_map`.
    private static let suffixMap = [
        ".svgz": ".svg.gz", ".tgz": ".tar.gz", ".taz": ".tar.gz", ".tz": ".tar.gz", ".tbz2": ".tar.bz2", ".txz": ".tar.xz",
    ]
    /// The keys of `mimetypes.encodings_map` (case sensitive).
    private static let encodings: Set = [".gz", ".Z", ".bz2", ".xz", ".br"]

    /// Python 3.11's `mimetypes.types_map` (strict), as `mime.types` lines.
    private static let pythonTable = """
        application/javascript js mjs
        application/json json
        application/manifest+json webmanifest
        application/msword doc dot wiz
        application/n-quads nq
        application/n-triples nt
        application/octet-stream bin a dll exe o obj so
        application/oda oda
        application/pdf pdf
        application/pkcs7-mime p7c
        application/postscript ps ai eps
        application/trig trig
        application/vnd.apple.mpegurl m3u m3u8
        application/vnd.ms-excel xls xlb
        application/vnd.ms-powerpoint ppt pot ppa pps pwz
        application/wasm wasm
        application/x-bcpio bcpio
        application/x-cpio cpio
        application/x-csh csh
        application/x-dvi dvi
        application/x-gtar gtar
        application/x-hdf hdf
        application/x-hdf5 h5
        application/x-latex latex
        application/x-mif mif
        application/x-netcdf cdf nc
        application/x-pkcs12 p12 pfx
        application/x-pn-realaudio ram
        application/x-python-code pyc pyo
        application/x-sh sh
        application/x-shar shar
        application/x-shockwave-flash swf
        application/x-sv4cpio sv4cpio
        application/x-sv4crc sv4crc
        application/x-tar tar
        application/x-tcl tcl
        application/x-tex tex
        application/x-texinfo texi texinfo
        application/x-troff roff t tr
        application/x-troff-man man
        application/x-troff-me me
        application/x-troff-ms ms
        application/x-ustar ustar
        application/x-wais-source src
        application/xml xsl rdf wsdl xpdl
        application/zip zip
        audio/3gpp 3gp 3gpp
        audio/3gpp2 3g2 3gpp2
        audio/aac aac adts loas ass
        audio/basic au snd
        audio/mpeg mp3 mp2
        audio/opus opus
        audio/x-aiff aif aifc aiff
        audio/x-pn-realaudio ra
        audio/x-wav wav
        image/avif avif
        image/bmp bmp
        image/gif gif
        image/ief ief
        image/jpeg jpg jpe jpeg
        image/heic heic
        image/heif heif
        image/png png
        image/svg+xml svg
        image/tiff tiff tif
        image/vnd.microsoft.icon ico
        image/x-cmu-raster ras
        image/x-portable-anymap pnm
        image/x-portable-bitmap pbm
        image/x-portable-graymap pgm
        image/x-portable-pixmap ppm
        image/x-rgb rgb
        image/x-xbitmap xbm
        image/x-xpixmap xpm
        image/x-xwindowdump xwd
        message/rfc822 eml mht mhtml nws
        text/css css
        text/csv csv
        text/html html htm
        text/n3 n3
        text/plain txt bat c h ksh pl srt
        text/richtext rtx
        text/tab-separated-values tsv
        text/vtt vtt
        text/x-python py
        text/x-setext etx
        text/x-sgml sgm sgml
        text/x-vcard vcf
        text/xml xml
        video/mp4 mp4
        video/mpeg mpeg m1v mpa mpe mpg
        video/quicktime mov qt
        video/webm webm
        video/x-msvideo avi
        video/x-sgi-movie movie
        """
}
