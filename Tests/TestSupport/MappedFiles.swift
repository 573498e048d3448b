import Foundation

/// A /proc file read to the end ("" when it cannot be read): procfs reports a size of 0, and a
/// reader that trusts the size stops after the first page.
public func procText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
    defer { try? handle.close() }
    return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
}

/// The files mapped into a process (this one when `pid` is nil), from its /proc maps.
public func mappedFiles(of pid: pid_t? = nil) -> Set<String> {
    let text = procText("/proc/\(pid.map(String.init) ?? "self")/maps")
    // A line is "range perms offset dev inode [path]"; only the lines with a path have a sixth field.
    return Set(
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            return fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : nil
        })
}

/// The mapped files whose name contains `name`.
public func mappedFiles(named name: String, of pid: pid_t? = nil) -> [String] {
    mappedFiles(of: pid).filter { ($0 as NSString).lastPathComponent.contains(name) }.sorted()
}
