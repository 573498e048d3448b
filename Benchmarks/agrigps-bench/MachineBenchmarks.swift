// The tractor's broadcasts beside the receiver's on one bus: what reading them costs the bus
// listener at 2,000 frames a second of bus traffic. Each figure beside its baseline.
import CANBus
import Foundation
import Machine
import NMEA2000
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The built drive (the Garmin receiver's recording with a tractor's hitch, wheel speed, engine and
/// fuel at 10 Hz each) topped up to 2,000 frames a second with other senders' traffic, through a
/// bus listener three ways: passed as the kernel's filter passes the receiver's PGNs alone (the
/// baseline), the receiver's and the machine's (what agrigps asks for), and every frame (no filter).
/// The kernel's filter is played here frame by frame with the same PGN sets, for a host without
/// vcan. The CPU is this thread's, per second of bus time; the goal is within 1.2× of the baseline.
func machineBusCPU() throws {
    let drive = CandumpLog(text: try TractorDrive.lines(hitchDown: 60, hitchUp: 150).joined(separator: "\n")).frames
    guard let first = drive.first?.time, let last = drive.last?.time, last > first else {
        print("machine bus: the built drive has no times")
        return
    }
    let busSeconds = last - first
    var frames = drive
    // Other traffic: proprietary PGN 65280 from 16 senders, evenly spread, to 2,000 frames a second.
    let others = max(0, Int(busSeconds * 2_000) - drive.count)
    for index in 0..<others {
        let time = first + busSeconds * Double(index) / Double(max(others, 1))
        let identifier = UInt32(6) << 26 | UInt32(0xFF) << 16 | UInt32(0x80 + index % 16)
        if let frame = CANFrame(
            time: time, identifier: identifier, data: [UInt8](repeating: UInt8(index & 0xFF), count: 8))
        {
            frames.append(frame)
        }
    }
    frames.sort { ($0.time ?? 0) < ($1.time ?? 0) }
    let receiverOnly = Set(BusWatcher.wanted).subtracting(MachinePGN.all)
    let withMachine = Set(BusWatcher.wanted)
    func cost(_ keep: (CANFrame) -> Bool) -> (microseconds: Double, passed: Int, working: Bool) {
        var best = Double.infinity, passed = 0, working = false
        for _ in 0..<3 {
            let watcher = BusWatcher(interface: "bench", address: nil, withoutGPSD: true)
            let start = threadCPUSeconds()
            passed = 0
            var nextSample = first
            for frame in frames where keep(frame) {
                passed += 1
                let now = frame.time ?? first
                watcher.take(frame, now: now)
                _ = watcher.ownFix()
                // The daemon's sample, once a second: the machine as it is.
                if now >= nextSample {
                    nextSample += 1
                    working = working || watcher.machineSnapshot(now: now).rearHitch?.inWork.value == true
                }
            }
            best = min(best, threadCPUSeconds() - start)
        }
        return (best * 1e6 / busSeconds, passed, working)
    }
    let baseline = cost { receiverOnly.contains($0.pgn) }
    let machine = cost { withMachine.contains($0.pgn) }
    let unfiltered = cost { _ in true }
    print(
        String(
            format: "machine bus: %.0f s of bus time, %d frames (%.0f a second)", busSeconds, frames.count,
            Double(frames.count) / busSeconds))
    print(
        String(
            format:
                "   receiver and machine PGNs: %.1f µs of CPU per bus second (%d frames passed, hitch seen in work: %@)"
                + "   baseline receiver's PGNs alone: %.1f µs (%d frames)   ratio %.2f (goal 1.2 for the whole run)",
            machine.microseconds, machine.passed, machine.working ? "yes" : "no", baseline.microseconds,
            baseline.passed,
            machine.microseconds / max(baseline.microseconds, 0.001)))
    print(
        String(
            format:
                "   no kernel filter, every frame: %.1f µs per bus second (%d frames)   ratio to the filtered run %.2f",
            unfiltered.microseconds, unfiltered.passed, unfiltered.microseconds / max(machine.microseconds, 0.001)))
}

/// This thread's CPU time so far.
private func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
