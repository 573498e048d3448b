import Testing

@testable import GNSS

@Suite struct FixStateTests {
    @Test(
        "gpsd mode and status map to the documented fix state",
        arguments: [
            (0, 0, FixState.noFix),
            (1, 0, .noFix),
            (1, 8, .noFix),  // gpsd: STATUS_SIM can come with MODE_NO_FIX
            (2, 0, .fix(.twoD, .autonomous)),
            (3, 0, .fix(.threeD, .autonomous)),
            (3, 1, .fix(.threeD, .autonomous)),
            (3, 2, .fix(.threeD, .dgps)),
            (3, 3, .fix(.threeD, .rtkFixed)),
            (3, 4, .fix(.threeD, .rtkFloat)),
            (3, 5, .fix(.threeD, .deadReckoning)),
            (2, 6, .fix(.twoD, .deadReckoning)),
            (3, 7, .fix(.threeD, .manual)),
            (3, 8, .fix(.threeD, .simulated)),
            (3, 9, .fix(.threeD, .autonomous)),
        ])
    func mapping(mode: Int, status: Int, expected: FixState) {
        #expect(FixState(gpsdMode: mode, gpsdStatus: status) == expected)
    }

    @Test func namesAreStableAndDistinct() {
        #expect(FixState.gpsdUnreachable.name == "gpsd_unreachable")
        #expect(FixState.noReceiver(.silent).name == "no_receiver")
        #expect(FixState.noFix.name == "no_fix")
        #expect(FixState.fix(.threeD, .rtkFixed).name == "fix_3d_rtk_fixed")
        #expect(FixState.fix(.twoD, .deadReckoning).name == "fix_2d_dead_reckoning")
        let names = FixQuality.allCases.flatMap { q in [FixState.fix(.twoD, q), .fix(.threeD, q)] }.map(\.name)
        #expect(Set(names).count == names.count)
    }

    @Test func namesRoundTrip() {
        var states: [FixState] =
            [.gpsdUnreachable, .noFix] + [NoReceiverReason.noDevice, .removed, .silent].map { .noReceiver($0) }
        states += FixQuality.allCases.flatMap { q in [FixState.fix(.twoD, q), .fix(.threeD, q)] }
        for state in states {
            #expect(FixState(name: state.name, noReceiverReason: state.noReceiverReason) == state)
        }
        #expect(FixState(name: "fix_4d_autonomous") == nil)
        #expect(FixState(name: "fix_3d_excellent") == nil)
        #expect(FixState(name: "") == nil)
    }

    @Test func onlyFixesHaveAPosition() {
        #expect(FixState.fix(.twoD, .autonomous).hasPosition)
        #expect(!FixState.noFix.hasPosition)
        #expect(!FixState.noReceiver(.removed).hasPosition)
        #expect(!FixState.gpsdUnreachable.hasPosition)
    }

    @Test func reportWithoutFixDropsCoordinates() {
        let report = PositionReport(gpsdMode: 1, latitude: 0, longitude: 0, altitudeHAE: 0)
        #expect(report.latitude == nil && report.longitude == nil && report.altitudeHAE == nil)
        let twoD = PositionReport(gpsdMode: 2, latitude: 48.1, longitude: 11.5, altitudeMSL: 500)
        #expect(twoD.latitude == 48.1 && twoD.altitudeMSL == nil)
    }

    @Test func modeWithoutCoordinatesIsNoFix() {
        // gpsd 3.22 sends mode 3 from GSA alone before any position (bu353-glonass.log).
        #expect(PositionReport(gpsdMode: 3).fixState == .noFix)
        #expect(PositionReport(gpsdMode: 3, latitude: 1, longitude: 2).fixState == .fix(.threeD, .autonomous))
    }
}
