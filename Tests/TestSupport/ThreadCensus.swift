import Foundation

/// The threads of this process by name (Linux keeps the first 15 bytes, /proc/self/task/*/comm).
///
/// An exit test's child process ends with exit(), which tears down the runtime's and Foundation's
/// globals while any thread still running may use them: a reader thread in libgps or a stand-in
/// server on a Foundation thread can then crash the child, and on a busy machine that is what a
/// slow thread does. Such a body waits for its threads before it ends.
public enum ThreadCensus {
    public static func count(named prefix: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.count { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(prefix) == true
        }
    }

    /// Waits up to `seconds` until no thread's name starts with any of `prefixes`; whether none is left.
    public static func waitUntilGone(_ prefixes: [String], seconds: Double = 15) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while prefixes.contains(where: { count(named: $0) > 0 }) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
