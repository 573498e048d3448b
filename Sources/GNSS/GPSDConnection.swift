import Bounds
import CGPS
import Foundation

/// One message read from gpsd, classified.
enum GPSDMessage: Sendable, Equatable {
    case report(PositionReport)
    case sky
    /// The device list gpsd sends after WATCH; the paths of the devices it knows.
    case devices([String])
    /// A device was opened (`active`) or closed (`activated: 0`).
    case device(path: String, active: Bool)
    case other
    /// Only part of a line was buffered; nothing to act on yet.
    case partial
}

/// A connection to gpsd through libgps. It owns one heap-allocated `gps_data_t` and must be used
/// from one thread only: libgps keeps all per-connection state in that struct.
///
/// libgps opens, watches and decodes, but we read the socket and cut the lines ourselves: libgps
/// 3.22 spins on a partial line (gps_waiting says data, gps_read gets EAGAIN, about 40,000 times
/// a second), and its gps_unpack loops for ever on some malformed lines, so only TPV and SKY lines
/// of a shape it copes with reach it.
final class GPSDConnection {
    /// The longest line accepted; gpsd's longest (SKY with every satellite in view) is a few KB.
    static let lineLimit = 65_536
    private static let lineCapacity = lineLimit + 1
    private static let chunkSize = 16_384

    let address: GPSDAddress
    private let gps: UnsafeMutablePointer<gps_data_t>
    /// A NUL-terminated copy of the line being decoded: gps_unpack wants a writable C string.
    private let line: UnsafeMutablePointer<CChar>
    private let chunk: UnsafeMutableRawBufferPointer
    private var input = LineBuffer()
    private var isOpen = false
    private var sky: (hdop: Double?, pdop: Double?, used: Int?) = (nil, nil, nil)

    /// Opens the connection and asks for JSON reports. Throws before anything is read.
    init(address: GPSDAddress) throws(GPSDError) {
        self.address = address
        gps = .allocate(capacity: 1)
        gps.initialize(to: gps_data_t())
        line = .allocate(capacity: Self.lineCapacity)
        chunk = .allocate(byteCount: Self.chunkSize, alignment: 1)
        // From here on deinit runs even if init throws, and it alone frees the buffers.
        var code: Int32 = 0
        if cgps_open(address.host, String(address.port), gps, &code) != 0 {
            throw Self.openError(code: code, address: address)
        }
        isOpen = true
        if cgps_watch_json(gps) < 0 {
            throw GPSDError(
                kind: .watchFailed, address: address, code: errno,
                message: String(cString: strerror(errno)))
        }
    }

    deinit {
        if isOpen { gps_close(gps) }
        gps.deinitialize(count: 1)
        gps.deallocate()
        line.deallocate()
        chunk.deallocate()
    }

    /// Waits up to `timeout` for data; false on timeout.
    func waitForData(timeout: Double) -> Bool {
        if input.hasLine() { return true }
        var entry = pollfd(fd: gps.pointee.gps_fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, pollMilliseconds(timeout)) > 0
    }

    /// Reads one message. Throws when gpsd has closed the connection, the read failed, or gpsd
    /// sent a line too long to be one of its own.
    func read() throws(GPSDError) -> GPSDMessage {
        if !input.hasLine() { try fill() }
        if input.nextLineLength() > Self.lineLimit {
            throw GPSDError(
                kind: .connectionLost, address: address, code: EMSGSIZE,
                message: "gpsd sent a line longer than \(Self.lineLimit) bytes; "
                    + "check that the address is that of a gpsd")
        }
        return input.takeLine { classify($0) } ?? .partial
    }

    /// One non-blocking read of whatever gpsd has sent.
    private func fill() throws(GPSDError) {
        let count = recv(gps.pointee.gps_fd, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT))
        if count > 0 {
            input.append(UnsafeRawBufferPointer(rebasing: chunk[..<count]))
            return
        }
        if count == 0 {
            throw GPSDError(kind: .connectionLost, address: address, code: 0, message: "gpsd closed the connection")
        }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return }
        throw GPSDError(kind: .connectionLost, address: address, code: code, message: String(cString: strerror(code)))
    }

    private func classify(_ raw: UnsafeRawBufferPointer) -> GPSDMessage {
        let kind = GPSDJSON.messageClass(of: raw)
        switch kind {
        case "TPV", "SKY":
            guard unpack(raw) else { return .other }
            guard kind == "TPV" else {
                rememberSky()
                return .sky
            }
            return .report(currentReport())
        case "DEVICES":
            guard let paths = GPSDJSON.devicePaths(in: raw) else { return .other }
            return .devices(paths)
        case "DEVICE":
            guard let device = GPSDJSON.device(in: raw) else { return .other }
            if !device.active { sky = (nil, nil, nil) }
            return .device(path: device.path, active: device.active)
        default: return .other
        }
    }

    /// Has libgps decode `raw` into `gps`; false for a line libgps must not see.
    private func unpack(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard raw.count < Self.lineCapacity, GPSDJSON.isSafeForLibgps(raw), let base = raw.baseAddress else {
            return false
        }
        UnsafeMutableRawPointer(line).copyMemory(from: base, byteCount: raw.count)
        line[raw.count] = 0
        _ = cgps_unpack(gps, line)
        return true
    }

    private func currentReport() -> PositionReport {
        // Read through the pointer (pointee is an addressor): copying gps_data_t would move 24 KB.
        let time = gps.pointee.fix.time
        let hasTime = time.tv_sec != 0 || time.tv_nsec != 0
        return PositionReport(
            time: hasTime ? Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9) : nil,
            gpsdMode: Int(gps.pointee.fix.mode),
            gpsdStatus: Int(gps.pointee.fix.status),
            latitude: finite(gps.pointee.fix.latitude),
            longitude: finite(gps.pointee.fix.longitude),
            altitudeHAE: finite(gps.pointee.fix.altHAE),
            altitudeMSL: finite(gps.pointee.fix.altMSL),
            speed: finite(gps.pointee.fix.speed),
            track: finite(gps.pointee.fix.track),
            hdop: sky.hdop, pdop: sky.pdop, satellitesUsed: sky.used,
            device: cString(gps.pointee.dev.path)
        )
    }

    private func rememberSky() {
        let used = Int(gps.pointee.satellites_used)
        sky = (finite(gps.pointee.dop.hdop), finite(gps.pointee.dop.pdop), used > 0 ? used : nil)
    }

    private static func openError(code: Int32, address: GPSDAddress) -> GPSDError {
        let message = String(cString: gps_errstr(code))
        // NL_NOSERVICE -1, NL_NOHOST -2: the name or service does not resolve.
        let kind: GPSDError.Kind = (code == -1 || code == -2) ? .cannotResolve : .cannotConnect
        return GPSDError(kind: kind, address: address, code: code, message: message)
    }
}

/// Bytes read from gpsd, cut into lines. A value type: the connection owns the one copy.
struct LineBuffer {
    private static let newline = UInt8(ascii: "\n")
    private var bytes: [UInt8] = []
    /// Bytes before `start` have been handed out.
    private var start = 0
    /// `bytes[start..<searched]` holds no newline: each byte is looked at once.
    private var searched = 0

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        if start > 0 {
            bytes.removeSubrange(..<start)
            searched -= start
            start = 0
        }
        bytes.append(contentsOf: chunk)
    }

    mutating func hasLine() -> Bool { newlineIndex() != nil }

    /// The length of the next line so far: up to its newline, or all that is buffered.
    mutating func nextLineLength() -> Int { (newlineIndex() ?? bytes.count) - start }

    /// Hands the next complete line to `body`, without its newline or CR, and drops it; nil when
    /// no complete line is buffered.
    mutating func takeLine<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        guard let end = newlineIndex() else { return nil }
        var length = end - start
        if length > 0 && bytes[end - 1] == UInt8(ascii: "\r") { length -= 1 }
        let first = start
        let result = bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[first..<(first + length)])) }
        start = end + 1
        searched = start
        return result
    }

    private mutating func newlineIndex() -> Int? {
        if let index = bytes[searched...].firstIndex(of: Self.newline) {
            searched = index
            return index
        }
        searched = bytes.count
        return nil
    }
}

/// A poll(2) timeout from seconds, rounded up so that a short wait does not become a busy loop;
/// NaN, negative and huge values cannot trap.
func pollMilliseconds(_ seconds: Double) -> Int32 {
    Int32(Bounds.clamped((seconds * 1000).rounded(.up), to: 0...86_400_000) ?? 0)
}

/// gpsd marks absent values with NaN; Swift callers get nil instead.
@inline(__always) func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }

/// Reads a NUL-terminated `char[N]` that Swift imports as a tuple.
func cString<T>(_ tuple: T) -> String? {
    withUnsafeBytes(of: tuple) { bytes in
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        guard end > 0 else { return nil }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
