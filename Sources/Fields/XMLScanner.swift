/// One attribute as written: its name and its value with the predefined and numeric character
/// references replaced.
struct XMLAttribute: Sendable, Equatable {
    var name: String
    var value: String
}

/// What the scanner found next.
enum XMLEvent: Sendable, Equatable {
    case start(name: String, attributes: [XMLAttribute], position: TextPosition)
    case end(name: String)
}

/// A pull parser for the part of XML that ISO 11783-10 TaskData uses: elements with attributes,
/// nested or self-closing, comments, processing instructions and the XML declaration. Text between
/// elements is skipped (TaskData keeps everything in attributes).
///
/// Written by hand rather than through libxml2 or Foundation's parser so that nothing in the file
/// can make it fetch or expand anything: a DOCTYPE is refused outright, so no entity (internal or
/// external) is ever declared, and a reference to any entity but the five predefined ones is an error.
/// The input is capped before a byte is parsed, and nesting is capped as it is read.
struct XMLScanner {
    private let bytes: [UInt8]
    private let fileName: String
    private let maximumDepth: Int
    private let maximumAttributes: Int
    private var index = 0
    private var open: [String] = []
    private var pendingEnd: String?
    private var sawRoot = false
    private var latin1 = false
    // Lines are counted as far as the last position asked for: positions are asked for in order,
    // so the whole file is counted once at most.
    private var countedTo = 0
    private var line = 1
    private var lineStart = 0

    init(_ bytes: [UInt8], fileName: String, limits: TaskDataLimits) throws(FieldsError) {
        guard bytes.count <= limits.maximumXMLBytes else {
            throw FieldsError(
                .tooLarge,
                "\(fileName) has \(bytes.count) bytes, more than the \(byteText(limits.maximumXMLBytes)) this reader takes; "
                    + "export fewer fields or without logged data")
        }
        self.bytes = bytes
        self.fileName = fileName
        maximumDepth = limits.maximumDepth
        maximumAttributes = limits.maximumAttributes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw FieldsError(
                .malformedXML,
                "\(fileName) is UTF-16; this reader takes UTF-8 (as ISO 11783-10 asks), so export it again as UTF-8")
        }
    }

    /// The element names open around the next event, outermost first.
    var path: [String] { open }

    mutating func next() throws(FieldsError) -> XMLEvent? {
        if let name = pendingEnd {
            pendingEnd = nil
            open.removeLast()
            return .end(name: name)
        }
        while true {
            guard let less = find(UInt8(ascii: "<"), from: index) else {
                if let unclosed = open.last {
                    throw error(
                        at: bytes.count,
                        "the file ends inside <\(unclosed)>, which is never closed; the file is cut short, export it again"
                    )
                }
                guard sawRoot else {
                    throw error(at: bytes.count, "there is no element in it; this is not a TaskData file")
                }
                return nil
            }
            index = less
            if starts(with: "<?") {
                let end = try skip(past: "?>", what: "processing instruction")
                if starts(with: "<?xml", at: less) { try readDeclaration(bytes[less..<end]) }
                index = end
            } else if starts(with: "<!--") {
                index = try skip(past: "-->", what: "comment")
            } else if starts(with: "<![CDATA[") {
                index = try skip(past: "]]>", what: "CDATA section")
            } else if starts(with: "<!") {
                // DOCTYPE, ENTITY, ELEMENT, ATTLIST: declarations that could define entities, and
                // with them expansion bombs or reads of other files. TaskData needs none of them.
                let word = String(
                    decoding: bytes[(index + 2)..<min(bytes.count, index + 10)].prefix { isNameByte($0) }, as: UTF8.self
                )
                throw error(
                    at: index,
                    "a <!\(word.isEmpty ? "…" : word) declaration is refused: TaskData needs no DTD, and this reader never "
                        + "declares or resolves entities; remove it, or export the file again")
            } else if starts(with: "</") {
                return try readEndTag()
            } else {
                return try readStartTag()
            }
        }
    }

    // MARK: - Tags

    private mutating func readStartTag() throws(FieldsError) -> XMLEvent {
        let start = index
        index += 1
        let name = try readName(what: "element name")
        if sawRoot && open.isEmpty {
            throw error(
                at: start, "a second root element <\(name)> after the first one closed; a TaskData file has one root")
        }
        guard open.count < maximumDepth else {
            throw FieldsError(
                .tooLarge,
                "\(fileName) \(position(start)): elements nest more than \(maximumDepth) deep; TaskData needs far fewer, so the file is damaged or hostile"
            )
        }
        var attributes: [XMLAttribute] = []
        var selfClosing = false
        while true {
            let hadSpace = skipSpace()
            guard index < bytes.count else { throw error(at: start, "the tag <\(name) is never closed with '>'") }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                break
            }
            if starts(with: "/>") {
                index += 2
                selfClosing = true
                break
            }
            guard hadSpace else { throw error(at: index, "expected a space, '>' or '/>' in <\(name)>") }
            let attributeStart = index
            let attributeName = try readName(what: "attribute name")
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                throw error(at: index, "attribute \(attributeName) of <\(name)> has no '=' and value")
            }
            index += 1
            skipSpace()
            let value = try readValue(of: attributeName, in: name)
            if attributes.contains(where: { $0.name == attributeName }) {
                throw error(at: attributeStart, "attribute \(attributeName) appears twice in <\(name)>")
            }
            guard attributes.count < maximumAttributes else {
                throw FieldsError(
                    .tooLarge,
                    "\(fileName) \(position(attributeStart)): <\(name)> has more than \(maximumAttributes) attributes; the file is damaged or hostile"
                )
            }
            attributes.append(XMLAttribute(name: attributeName, value: value))
        }
        open.append(name)
        sawRoot = true
        if selfClosing { pendingEnd = name }
        return .start(name: name, attributes: attributes, position: position(start))
    }

    private mutating func readEndTag() throws(FieldsError) -> XMLEvent {
        let start = index
        index += 2
        let name = try readName(what: "element name")
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else {
            throw error(at: start, "the end tag </\(name) is never closed with '>'")
        }
        index += 1
        guard let innermost = open.last else { throw error(at: start, "</\(name)> closes nothing") }
        guard innermost == name else {
            throw error(at: start, "</\(name)> where </\(innermost)> was due; the elements are not nested properly")
        }
        open.removeLast()
        return .end(name: name)
    }

    private mutating func readName(what: String) throws(FieldsError) -> String {
        let start = index
        while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
        guard index > start, index - start <= 256 else {
            throw error(at: start, index == start ? "expected an \(what)" : "an \(what) longer than 256 bytes")
        }
        let first = bytes[start]
        guard !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), first != UInt8(ascii: "-"),
            first != UInt8(ascii: ".")
        else {
            throw error(at: start, "an \(what) cannot start with '\(Character(Unicode.Scalar(first)))'")
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func readValue(of attribute: String, in element: String) throws(FieldsError) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw error(at: index, "the value of \(attribute) in <\(element)> is not in quotes")
        }
        let quote = bytes[index]
        let start = index + 1
        guard let end = find(quote, from: start) else {
            throw error(at: index, "the value of \(attribute) in <\(element)> never ends")
        }
        if let less = bytes[start..<end].firstIndex(of: UInt8(ascii: "<")) {
            throw error(at: less, "'<' inside the value of \(attribute) in <\(element)>; a quote is missing before it")
        }
        index = end + 1
        let raw = bytes[start..<end]
        guard raw.contains(UInt8(ascii: "&")) else { return text(raw) }
        return try resolveReferences(raw, attribute: attribute, element: element)
    }

    /// The five predefined entities and numeric character references; anything else is an error,
    /// since no entity is ever declared (a DOCTYPE is refused).
    private mutating func resolveReferences(_ raw: ArraySlice<UInt8>, attribute: String, element: String)
        throws(FieldsError) -> String
    {
        var result = ""
        var cursor = raw.startIndex
        while let ampersand = raw[cursor...].firstIndex(of: UInt8(ascii: "&")) {
            result += text(raw[cursor..<ampersand])
            guard let semicolon = raw[ampersand...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                throw error(at: ampersand, "a bare '&' in the value of \(attribute) in <\(element)>; write it as &amp;")
            }
            let reference = String(decoding: raw[(ampersand + 1)..<semicolon], as: UTF8.self)
            switch reference {
            case "lt": result += "<"
            case "gt": result += ">"
            case "amp": result += "&"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                var scalar: Unicode.Scalar?
                if reference.hasPrefix("#x") || reference.hasPrefix("#X") {
                    scalar = UInt32(reference.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if reference.hasPrefix("#") {
                    scalar = UInt32(reference.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                } else {
                    throw error(
                        at: ampersand,
                        "the entity &\(reference); in the value of \(attribute) in <\(element)> is refused: this reader resolves "
                            + "only &lt; &gt; &amp; &quot; &apos; and numeric references")
                }
                guard let scalar, scalar.value != 0 else {
                    throw error(
                        at: ampersand, "&\(reference); in the value of \(attribute) in <\(element)> is not a character")
                }
                result.unicodeScalars.append(scalar)
            }
            cursor = semicolon + 1
        }
        return result + text(raw[cursor...])
    }

    /// The declaration's encoding: UTF-8 (or its subset ASCII) as ISO 11783-10 asks, or ISO 8859-1,
    /// which some older exports declare. Anything else would be misread, so it is refused.
    private mutating func readDeclaration(_ declaration: ArraySlice<UInt8>) throws(FieldsError) {
        let text = String(decoding: declaration, as: UTF8.self).lowercased()
        guard let range = text.range(of: "encoding") else { return }
        let rest = text[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
        let encoding = rest.prefix { $0 != "\"" && $0 != "'" && $0 != " " && $0 != "?" }
        switch encoding {
        case "utf-8", "utf8", "us-ascii", "ascii": latin1 = false
        case "iso-8859-1", "iso8859-1", "latin1", "latin-1": latin1 = true
        default:
            throw error(
                at: declaration.startIndex,
                "the encoding \(String(encoding.prefix(40))) is not read; export the file as UTF-8")
        }
    }

    // MARK: - Bytes

    private func text(_ slice: ArraySlice<UInt8>) -> String {
        guard latin1 else { return String(decoding: slice, as: UTF8.self) }
        var result = ""
        result.unicodeScalars.append(contentsOf: slice.map { Unicode.Scalar($0) })
        return result
    }

    private func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "."), 0x80...0xFF:
            true
        default:
            false
        }
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count,
            bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D
        { index += 1 }
        return index > start
    }

    private func find(_ byte: UInt8, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        return bytes[start...].firstIndex(of: byte)
    }

    private func starts(with literal: StaticString, at offset: Int? = nil) -> Bool {
        let at = offset ?? index
        let count = literal.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { expected in
            for position in 0..<count where bytes[at + position] != expected[position] { return false }
            return true
        }
    }

    /// The index just past `terminator`, searching from the current index.
    private mutating func skip(past terminator: StaticString, what: String) throws(FieldsError) -> Int {
        let first = terminator.withUTF8Buffer { $0[0] }
        var cursor = index + 2
        while let candidate = find(first, from: cursor) {
            if starts(with: terminator, at: candidate) { return candidate + terminator.utf8CodeUnitCount }
            cursor = candidate + 1
        }
        throw error(at: index, "a \(what) that never ends")
    }

    private mutating func position(_ offset: Int) -> TextPosition {
        let target = min(offset, bytes.count)
        if target < countedTo { return recount(target) }
        while countedTo < target {
            if bytes[countedTo] == 0x0A {
                line += 1
                lineStart = countedTo + 1
            }
            countedTo += 1
        }
        return TextPosition(line: line, column: target - lineStart + 1, offset: target)
    }

    /// A position before the last one asked for (an attribute of a tag already passed): counted afresh.
    private func recount(_ target: Int) -> TextPosition {
        var line = 1, lineStart = 0
        for offset in 0..<target where bytes[offset] == 0x0A {
            line += 1
            lineStart = offset + 1
        }
        return TextPosition(line: line, column: target - lineStart + 1, offset: target)
    }

    private mutating func error(at offset: Int, _ message: String) -> FieldsError {
        FieldsError(.malformedXML, "\(fileName) \(position(offset)): \(message)")
    }
}
