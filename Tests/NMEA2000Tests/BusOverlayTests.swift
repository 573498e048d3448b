import Foundation
import GNSS
import NMEA2000
import Testing

/// gpsd's report of a bus receiver, with what the bus says added: RTK kept, and a fix where gpsd
/// has no mode for want of 129539.
@Suite
struct BusOverlayTests {
    static let fixTime = Date(timeIntervalSince1970: 1_767_254_401.5)

    static func overlay(method: UInt8, from source: UInt8 = 7, address: UInt8? = nil, at now: Double = 100)
        -> BusOverlay
    {
        var overlay = BusOverlay(address: address)
        BuiltFramesTests.positionData(method: method, from: source).forEach { overlay.add($0, now: now) }
        return overlay
    }

    @Test(
        "gpsd's plain fix becomes the bus's RTK fixed, RTK float or DGNSS",
        arguments: [(UInt8(4), FixQuality.rtkFixed), (5, .rtkFloat), (2, .dgps), (1, .autonomous)])
    func quality(method: UInt8, quality: FixQuality) {
        let report = PositionReport(
            time: Self.fixTime, gpsdMode: 3, latitude: 52.5, longitude: 13.25, device: "nmea2000://can0:7")
        #expect(Self.overlay(method: method).apply(to: report, now: 100.5).fixState == .fix(.threeD, quality))
    }

    @Test("where gpsd says no fix for want of 129539, the receiver's own fix from 129029")
    func withoutDOPs() {
        let report = PositionReport(gpsdMode: 0, device: "nmea2000://can0:7")
        let adjusted = Self.overlay(method: 5).apply(to: report, now: 101)
        #expect(adjusted.fixState == .fix(.threeD, .rtkFloat))
        #expect(
            adjusted.latitude == 52.5 && adjusted.longitude == 13.25 && adjusted.altitudeHAE == 61
                && adjusted.time == Self.fixTime)
        #expect(adjusted.hdop == 0.8 && adjusted.satellitesUsed == 14 && adjusted.device == "nmea2000://can0:7")
    }

    @Test(
        "left as gpsd said: a stale 129029, another fix's time, a bus without a fix, another sender than the one given")
    func untouched() {
        let report = PositionReport(time: Self.fixTime, gpsdMode: 3, latitude: 52.5, longitude: 13.25)
        #expect(Self.overlay(method: 4).apply(to: report, now: 103).fixState == .fix(.threeD, .autonomous), "2.5 s old")
        let later = PositionReport(
            time: Self.fixTime.addingTimeInterval(5), gpsdMode: 3, latitude: 52.5, longitude: 13.25)
        #expect(
            Self.overlay(method: 4).apply(to: later, now: 100).fixState == .fix(.threeD, .autonomous), "another fix")
        #expect(Self.overlay(method: 0).apply(to: PositionReport(gpsdMode: 0), now: 100).fixState == .noFix)
        #expect(
            Self.overlay(method: 4, from: 7, address: 9).apply(to: report, now: 100).fixState
                == .fix(.threeD, .autonomous))
    }

    @Test("the receiver's own fix, for when gpsd reports nothing: from a 129029 of the last 2.5 s with a position")
    func receiverReport() {
        let report = Self.overlay(method: 4).receiverReport(now: 101)
        #expect(report?.fixState == .fix(.threeD, .rtkFixed))
        #expect(report?.latitude == 52.5 && report?.time == Self.fixTime && report?.satellitesUsed == 14)
        #expect(Self.overlay(method: 4).receiverReport(now: 103) == nil, "3 s old")
        #expect(Self.overlay(method: 0).receiverReport(now: 100) == nil, "no GNSS fix")
        #expect(Self.overlay(method: 4, from: 7, address: 9).receiverReport(now: 100) == nil, "another sender's")
    }

    @Test("without an address given, the receiver the finder chose is read")
    func chosen() {
        var overlay = BusOverlay()
        BuiltFramesTests.positionData(method: 1, from: 3).forEach { overlay.add($0, now: 100) }
        BuiltFramesTests.positionData(method: 4, from: 28).forEach { overlay.add($0, now: 100) }
        #expect(overlay.finder.chosen?.address == 28)
        let report = PositionReport(time: Self.fixTime, gpsdMode: 3, latitude: 52.5, longitude: 13.25)
        #expect(overlay.apply(to: report, now: 100).fixState == .fix(.threeD, .rtkFixed))
    }

    @Test("a report of another device than the bus's is set aside; on the bus, the device's name does not decide")
    func devices() {
        let overlay = Self.overlay(method: 1, from: 7)
        func admits(_ device: String?) -> Bool {
            overlay.admits(
                PositionReport(time: Self.fixTime, gpsdMode: 3, latitude: 52.5, longitude: 13.25, device: device),
                interface: "can0", now: 100)
        }
        #expect(admits("nmea2000://can0:7"))
        #expect(admits("nmea2000://can0"))
        #expect(admits("nmea2000://can0:176"), "gpsd 3.22 names the receiver's fix after another sender's address")
        #expect(admits(nil), "a report that names no device")
        #expect(!admits("nmea2000://can01"))
        #expect(!admits("/dev/ttyUSB0"), "a USB receiver beside the bus's")
    }

    @Test(
        "reports go out in the order of their fixes: a late copy of an older fix is set aside, the receiver's own fix standing in too"
    )
    func order() {
        var overlay = Self.overlay(method: 1, from: 7)
        func take(secondsAfter: Double, mode: Int = 3) -> Bool {
            let report = PositionReport(
                time: Self.fixTime.addingTimeInterval(secondsAfter), gpsdMode: mode,
                latitude: mode >= 2 ? 52.5 : nil, longitude: mode >= 2 ? 13.25 : nil)
            return overlay.take(report, interface: "can0", now: 100) != nil
        }
        #expect(take(secondsAfter: 0) && take(secondsAfter: 0), "the same fix from two devices")
        #expect(take(secondsAfter: 1))
        #expect(!take(secondsAfter: 0), "a late copy of the fix before")
        #expect(
            !take(secondsAfter: 1, mode: 1),
            "gpsd's report without a fix becomes 129029's, which is older than the one gone out")
        #expect(take(secondsAfter: 2))
        let stale = PositionReport(time: Self.fixTime, gpsdMode: 3, latitude: 52.5, longitude: 13.25)
        let lateCopy = overlay.inOrder(stale)
        #expect(!lateCopy)
        let setBack = overlay.inOrder(
            PositionReport(time: Self.fixTime.addingTimeInterval(-60), gpsdMode: 3, latitude: 52.5, longitude: 13.25))
        #expect(setBack, "a minute back: the receiver's time was set back")
    }

    @Test(
        "with two senders of positions, a report is the receiver's by its position; one without a position only where the receiver has none"
    )
    func byPosition() {
        var overlay = BusOverlay()
        BuiltFramesTests.positionData(method: 1, from: 3, latitude: 52.4).forEach { overlay.add($0, now: 100) }
        BuiltFramesTests.positionData(method: 4, from: 28, latitude: 52.5).forEach { overlay.add($0, now: 100) }
        #expect(overlay.finder.chosen?.address == 28)
        func admits(
            latitude: Double?, device: String = "nmea2000://can0:3", now: Double = 100.5, in overlay: BusOverlay
        ) -> Bool {
            let report = PositionReport(
                time: Self.fixTime, gpsdMode: latitude == nil ? 1 : 3, latitude: latitude,
                longitude: latitude == nil ? nil : 13.25,
                device: device)
            return overlay.admits(report, interface: "can0", now: now)
        }
        #expect(admits(latitude: 52.5, in: overlay), "the receiver's position, whatever the device's name")
        #expect(!admits(latitude: 52.4, device: "nmea2000://can0:28", in: overlay), "the other sender's position")
        #expect(
            admits(latitude: 52.400_001, in: overlay),
            "a position neither gave lately: the receiver's newest, not yet read here")
        #expect(admits(latitude: nil, in: overlay), "no fix from gpsd, and the receiver's 129029 stands in for it")
        #expect(admits(latitude: nil, now: 110, in: overlay), "no fix, and the receiver has given no position for 10 s")

        // A receiver of 129025 only: nothing stands in for gpsd's report without a position.
        var rapid = BusOverlay(address: 9)
        BuiltFramesTests.positionData(method: 1, from: 3, latitude: 52.4).forEach { rapid.add($0, now: 100) }
        rapid.add(Self.positionRapid(from: 9, latitude: 52.5), now: 100)
        #expect(
            !admits(latitude: nil, in: rapid),
            "another device's report without a position, while the receiver gives positions")
        #expect(admits(latitude: 52.5, in: rapid))
        #expect(admits(latitude: nil, now: 110, in: rapid))
    }

    static func positionRapid(from source: UInt8, latitude: Double) -> CANFrame {
        var bytes = [UInt8](repeating: 0, count: 8)
        withUnsafeBytes(of: Int32((latitude * 1e7).rounded()).littleEndian) {
            for (index, byte) in $0.enumerated() { bytes[index] = byte }
        }
        withUnsafeBytes(of: Int32(132_500_000).littleEndian) {
            for (index, byte) in $0.enumerated() { bytes[4 + index] = byte }
        }
        return CANFrame(identifier: 0x09F8_0100 | UInt32(source), data: bytes)!
    }
}
