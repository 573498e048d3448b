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
final class GPSDConnection {
    private static let lineCapacity = 65_536

    let address: GPSDAddress
    private let gps: UnsafeMutablePointer<gps_data_t>
    private let line: UnsafeMutablePointer<CChar>
    private var isOpen = false
    private var sky: (hdop: Double?, pdop: Double?, used: Int?) = (nil, nil, nil)

    /// Opens the connection and asks for JSON reports. Throws before anything is read.
    init(address: GPSDAddress) throws(GPSDError) {
        self.address = address
        gps = .allocate(capacity: 1)
        gps.initialize(to: gps_data_t())
        line = .allocate(capacity: Self.lineCapacity)
        // From here on deinit runs even if init throws, and it alone frees the buffers.
        var code: Int32 = 0
        if cgps_open(address.host, String(address.port), gps, &code) != 0 {
            throw Self.openError(code: code, address: address)
        }
        isOpen = true
        if cgps_watch_json(gps) < 0 {
            throw GPSDError(kind: .watchFailed, address: address, code: errno,
                            message: String(cString: strerror(errno)))
        }
    }

    deinit {
        if isOpen { gps_close(gps) }
        gps.deinitialize(count: 1)
        gps.deallocate()
        line.deallocate()
    }

    /// Waits up to `timeout` for data; false on timeout.
    func waitForData(timeout: Double) -> Bool {
        gps_waiting(gps, Int32(max(0, timeout) * 1_000_000))
    }

    /// Reads one message. Throws when gpsd has closed the connection or the read failed.
    func read() throws(GPSDError) -> GPSDMessage {
        errno = 0
        let count = cgps_read_line(gps, line, Int32(Self.lineCapacity))
        if count < 0 {
            let code = errno
            let reason = code == 0 ? "gpsd closed the connection" : String(cString: strerror(code))
            throw GPSDError(kind: .connectionLost, address: address, code: code, message: reason)
        }
        if count == 0 { return .partial }
        let raw = UnsafeRawBufferPointer(start: line, count: strlen(line))
        switch GPSDJSON.messageClass(of: raw) {
        case "TPV": return .report(currentReport())
        case "SKY":
            rememberSky()
            return .sky
        case "DEVICES": return .devices(GPSDJSON.devicePaths(in: raw))
        case "DEVICE":
            guard let device = GPSDJSON.device(in: raw) else { return .other }
            if !device.active { sky = (nil, nil, nil) }
            return .device(path: device.path, active: device.active)
        default: return .other
        }
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
