import ChildProcesses
import Foundation
import GPSDReplay

/// A real headless Chromium driven over the W3C WebDriver protocol by Debian's chromedriver, on a
/// loopback port of its own. Just what the cab view's tests need: open a page at a given viewport,
/// run script in it, click, type, and take screenshots.
public final class WebDriver: @unchecked Sendable {
    public static let chromium = "/usr/bin/chromium"
    public static let chromedriver = "/usr/bin/chromedriver"

    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: chromium)
            && FileManager.default.isExecutableFile(atPath: chromedriver)
    }

    private let driver: ChildProcess
    private let port: Int
    /// The driver's own path prefix (`--url-base`): tests run side by side, and a port that another
    /// test's driver took between our pick and our driver's start must not answer for ours.
    private let base = "/agrigps-" + UUID().uuidString.lowercased()
    private let profile: String
    public private(set) var session = ""

    /// Starts chromedriver and a browser whose viewport is `width`×`height` CSS pixels; with
    /// `language` ("de-DE"), one that asks for that language first (Accept-Language, navigator.languages).
    public init(width: Int, height: Int, language: String? = nil) async throws {
        guard Self.isInstalled else {
            throw LoopbackHTTPError(
                description: "chromium and chromium-driver are not installed (script/bootstrap installs them)")
        }
        profile = NSTemporaryDirectory() + "agrigps-chromium-\(UUID().uuidString)"
        (driver, port) = try await Self.startDriver(base: base)
        do {
            session = try await newSession(width: width, height: height, language: language)
        } catch {
            close()
            throw error
        }
    }

    /// Starts chromedriver on a free port and waits until it answers under `base`; a driver that
    /// could not have the port (taken meanwhile) ends at once, and another port is tried.
    private static func startDriver(base: String) async throws -> (ChildProcess, Int) {
        for _ in 0..<3 {
            let port = Int(try ReplayGPSD.freeLoopbackPort())
            let driver = try ChildProcess(
                executable: chromedriver, arguments: ["--port=\(port)", "--url-base=\(base)"],
                environment: ProcessInfo.processInfo.environment, outputPath: "/dev/null", errorPath: "/dev/null")
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline, driver.isRunning() {
                if let ready = try? await LoopbackHTTP.request("GET", port: port, path: base + "/status", timeout: 2),
                    ((ready.json?["value"] as? [String: Any])?["ready"] as? Bool) == true
                {
                    return (driver, port)
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            driver.terminate(grace: 1)
        }
        throw LoopbackHTTPError(description: "chromedriver did not start on three ports in turn")
    }

    private func newSession(width: Int, height: Int, language: String?) async throws -> String {
        var arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--user-data-dir=\(profile)", "--window-size=\(width),\(height)", "--hide-scrollbars",
        ]
        var options: [String: Any] = [
            "binary": Self.chromium,
            "mobileEmulation": ["deviceMetrics": ["width": width, "height": height, "pixelRatio": 1]],
        ]
        if let language {
            arguments.append("--lang=\(language)")
            options["prefs"] = ["intl.accept_languages": language]
        }
        options["args"] = arguments
        let capabilities: [String: Any] = [
            "capabilities": ["alwaysMatch": ["browserName": "chrome", "goog:chromeOptions": options]]
        ]
        let created = try await command("POST", "/session", capabilities, timeout: 60)
        guard let id = (created as? [String: Any])?["sessionId"] as? String else {
            throw LoopbackHTTPError(description: "chromedriver made no session: \(String(describing: created))")
        }
        return id
    }

    /// Ends the browser through the driver, then the driver.
    public func quit() async {
        if !session.isEmpty { _ = try? await command("DELETE", "/session/\(session)", nil, timeout: 20) }
        close()
    }

    /// Ends the driver and every browser process of this profile, at once and without waiting on the
    /// driver: for `defer`, so that no failed test leaves a Chromium behind.
    public func close() {
        driver.terminate(grace: 2)
        let marker = "--user-data-dir=\(profile)"
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).contains(marker)
            else { continue }
            kill(pid, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: profile)
    }

    public func open(_ url: String) async throws {
        _ = try await command("POST", "/session/\(session)/url", ["url": url], timeout: 30)
    }

    /// Runs `script` (a function body; `arguments[0]`… are `arguments`) in the page and returns its value.
    @discardableResult
    public func run(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command(
            "POST", "/session/\(session)/execute/sync", ["script": script, "args": arguments], timeout: 30)
    }

    /// Polls `script` until it returns true, or gives up after `timeout` seconds; whether it did.
    public func wait(timeout: Double, for script: String) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await run(script) as? Bool == true { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    public func element(_ selector: String) async throws -> String {
        let found = try await command(
            "POST", "/session/\(session)/element", ["using": "css selector", "value": selector], timeout: 10)
        guard let object = found as? [String: Any], let id = object.values.first as? String else {
            throw LoopbackHTTPError(description: "no element \(selector)")
        }
        return id
    }

    /// Found by one request and clicked by the next: an element the page redrew in between (a list
    /// refreshed with a new sample) is a stale reference, and is found again, up to three times.
    public func click(_ selector: String) async throws {
        for attempt in 1...3 {
            do {
                _ = try await command(
                    "POST", "/session/\(session)/element/\(try await element(selector))/click", [:], timeout: 10)
                return
            } catch  where attempt < 3 && String(describing: error).contains("stale element") {
                continue
            }
        }
    }

    public func type(_ text: String, into selector: String) async throws {
        let id = try await element(selector)
        _ = try await command("POST", "/session/\(session)/element/\(id)/clear", [:], timeout: 10)
        _ = try await command("POST", "/session/\(session)/element/\(id)/value", ["text": text], timeout: 10)
    }

    /// Chooses a file in a file input, as a person picking it would (a file input cannot be cleared).
    public func attach(_ path: String, to selector: String) async throws {
        _ = try await command(
            "POST", "/session/\(session)/element/\(try await element(selector))/value", ["text": path], timeout: 10)
    }

    public func text(_ selector: String) async throws -> String {
        // Found and read in one script: found by one request and read by the next, an element the
        // page redrew in between (its 5 s refresh, a new sample) was a stale reference.
        // As WebDriver's own text: nothing for an element not shown, the rendered words trimmed.
        let read = try await run(
            """
            const e = document.querySelector(arguments[0]);
            if (!e) return null;
            const shown = e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
            return [shown ? e.innerText.trim() : ''];
            """, [selector])
        guard let found = read as? [Any] else { throw LoopbackHTTPError(description: "no element \(selector)") }
        return (found.first as? String) ?? ""
    }

    /// A PNG of the viewport.
    public func screenshot() async throws -> Data {
        guard let base64 = try await command("GET", "/session/\(session)/screenshot", nil, timeout: 30) as? String,
            let data = Data(base64Encoded: base64)
        else { throw LoopbackHTTPError(description: "no screenshot") }
        return data
    }

    private func command(_ method: String, _ path: String, _ body: Any?, timeout: Double) async throws -> Any? {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) }
        let reply = try await LoopbackHTTP.request(
            method, port: port, path: base + path, headers: data == nil ? [:] : ["Content-Type": "application/json"],
            body: data, timeout: timeout)
        let value = reply.json?["value"]
        if reply.status >= 300 {
            let detail = (value as? [String: Any])?["message"] as? String ?? reply.text
            throw LoopbackHTTPError(
                description: "WebDriver \(method) \(path): HTTP \(reply.status): \(detail.prefix(500))")
        }
        return value is NSNull ? nil : value
    }
}

/// Whether a PNG is more than one flat colour: decoded by Python's zlib (a Debian base package), the
/// share of the most common pixel and the number of distinct ones.
public enum PNGCheck {
    public static func variety(of path: String) async throws -> (dominantShare: Double, colours: Int) {
        let script = """
            import sys, zlib, struct, collections
            data = open(sys.argv[1], 'rb').read()
            assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
            pos, idat, width, height, colour = 8, b'', 0, 0, 0
            while pos < len(data):
                length, kind = struct.unpack('>I4s', data[pos:pos + 8])
                chunk = data[pos + 8:pos + 8 + length]
                if kind == b'IHDR': width, height, depth, colour = struct.unpack('>IIBB', chunk[:10])
                if kind == b'IDAT': idat += chunk
                pos += 12 + length
            channels = {2: 3, 6: 4}[colour]
            raw = zlib.decompress(idat)
            stride = width * channels
            previous = bytearray(stride)
            counts = collections.Counter()
            for row in range(height):
                start = row * (stride + 1)
                kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
                for i in range(stride):
                    left = line[i - channels] if i >= channels else 0
                    up = previous[i]
                    corner = previous[i - channels] if i >= channels else 0
                    if kind == 1: line[i] = (line[i] + left) & 255
                    elif kind == 2: line[i] = (line[i] + up) & 255
                    elif kind == 3: line[i] = (line[i] + (left + up) // 2) & 255
                    elif kind == 4:
                        p = left + up - corner
                        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                        line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
                counts.update(bytes(line[i:i + 3]) for i in range(0, stride, channels * 4))
                previous = line
            total = sum(counts.values())
            print(counts.most_common(1)[0][1] / total, len(counts))
            """
        let output = NSTemporaryDirectory() + "agrigps-png-\(UUID().uuidString).txt"
        defer { unlink(output) }
        let process = try ChildProcess(
            executable: "/usr/bin/python3", arguments: ["-c", script, path],
            environment: ProcessInfo.processInfo.environment, outputPath: output, errorPath: output + ".err")
        defer { unlink(output + ".err") }
        guard try await process.finish(timeout: 60) == 0 else {
            throw LoopbackHTTPError(
                description:
                    "python3 could not read \(path): \((try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "")"
            )
        }
        let parts = try String(contentsOfFile: output, encoding: .utf8).split(separator: " ")
        guard parts.count == 2, let share = Double(parts[0].trimmingCharacters(in: .whitespacesAndNewlines)),
            let colours = Int(parts[1].trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw LoopbackHTTPError(description: "unreadable PNG check output")
        }
        return (share, colours)
    }
}
