import Foundation
import GNSS
import Testing

@Suite struct MachineTotalsTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "each reading stands for the time until the next: working, not working, fuel by its rate, the engine while it turns; nothing for a step back, a long gap, or unknown"
    )
    func adding() {
        var totals = MachineTotals(effectiveSeconds: 100, ineffectiveSeconds: 50, fuelMillilitres: 7, engineSeconds: 3)
        totals = totals.adding(
            MachineReading(work: .working, engineSpeed: 1_800, fuelRate: 18), from: start,
            to: start.addingTimeInterval(2))
        // 18 L/h for 2 s: 10 ml.
        #expect(
            totals
                == MachineTotals(effectiveSeconds: 102, ineffectiveSeconds: 50, fuelMillilitres: 17, engineSeconds: 5))
        totals = totals.adding(
            MachineReading(work: .notWorking, engineSpeed: 0), from: start, to: start.addingTimeInterval(45))
        #expect(
            totals.ineffectiveSeconds == 95 && totals.fuelMillilitres == 17 && totals.engineSeconds == 5,
            "an engine at 0 rpm stands")
        let unchanged = totals
        totals = totals.adding(
            MachineReading(work: .working, fuelRate: 18), from: start, to: start.addingTimeInterval(45.5))
        totals = totals.adding(
            MachineReading(work: .working, fuelRate: 18), from: start, to: start.addingTimeInterval(-1))
        totals = totals.adding(MachineReading(work: .unknown), from: start, to: start.addingTimeInterval(10))
        #expect(totals == unchanged)
    }
}
