import CSocketCAN
import Foundation
import NMEA2000
import TestSupport
import Testing

@testable import CANBus

#if canImport(Glibc)
import Glibc
#endif

/// The CAN socket's parts that need no interface: the kernel's PGN filters, and the refusals of the
/// replay's writer.
@Suite
struct SocketCANTests {
    /// What the kernel does with a filter: the frame passes when its identifier matches under the mask.
    static func passes(_ pgn: UInt32, _ identifier: UInt32) -> Bool {
        let filter = SocketCANReader.filter(for: pgn)
        return (identifier | CAN_EFF_FLAG) & filter.can_mask == filter.can_id & filter.can_mask
    }

    @Test("a PGN's filter passes its frames from every sender, to every destination, and no other PGN's")
    func filters() {
        #expect(Self.passes(129_029, 0x0DF8_0502) && Self.passes(129_029, 0x0DF8_05FE))
        #expect(!Self.passes(129_029, 0x09F8_0102), "129025")
        #expect(
            Self.passes(60_928, 0x18EE_FF01) && Self.passes(60_928, 0x18EE_0023), "an address claim to all and to one")
        #expect(!Self.passes(60_928, 0x18EA_FF01), "a request (59904)")
        let standard = SocketCANReader.filter(for: 129_029)
        #expect(0x0DF & standard.can_mask != standard.can_id & standard.can_mask, "a standard frame has no EFF flag")
    }

    @Test("over gpsd's recording, exactly the frames of the PGNs the listener keeps pass")
    func recording() throws {
        let log = CandumpLog(
            text: try String(contentsOfFile: Fixtures.can("logfile_20140914_365495765_can.log"), encoding: .utf8))
        let kept = log.frames.filter { frame in BusWatcher.wanted.contains { Self.passes($0, frame.identifier) } }
        #expect(kept.count == log.frames.filter { BusWatcher.wanted.contains($0.pgn) }.count)
        #expect(kept.allSatisfy { BusWatcher.wanted.contains($0.pgn) })
        #expect(kept.count > 2_000 && kept.count < log.frames.count, "\(kept.count) of \(log.frames.count)")
    }

    @Test("the replay's writer refuses where it cannot write: no SocketCAN, no interface, a bad name")
    func writerRefusals() {
        let probe = socket(PF_CAN, Int32(SOCK_RAW.rawValue), CAN_RAW)
        let hasSocketCAN = probe >= 0
        if hasSocketCAN { close(probe) }
        #expect(throws: hasSocketCAN ? CANBusError.noInterface("agrigpsnone0") : CANBusError.noSocketCAN) {
            try VirtualBusWriter(interface: "agrigpsnone0")
        }
        #expect(throws: CANBusError.badName("can 0")) { try VirtualBusWriter(interface: "can 0") }
        #expect(CANBusError.notVirtual("can0").description.contains("ip link add vcan0 type vcan"))
    }
}
