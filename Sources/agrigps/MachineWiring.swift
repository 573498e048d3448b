import CANBus
import GNSS
import Gateway
import Machine
import StateDirectory

/// The machine's side of a bus listener, as the daemon takes it: a reading for each sample and the
/// lines of status. A bus that never carried a machine's message gives neither: a receiver alone on
/// its bus, or a boat's, has no machine.
enum MachineWiring {
    static func attach(_ watcher: BusWatcher, rules: WorkRules = WorkRules(), to configuration: inout GatewayDaemon.Configuration) {
        configuration.machine = { sample in
            // As the machine was at the sample's fix: the sample may be taken a while after it came.
            let snapshot = sample.report?.time.flatMap(watcher.machineSnapshot(atFix:)) ?? watcher.machineSnapshot()
            guard snapshot.everHeard else { return nil }
            return rules.reading(snapshot, workSwitch: false, receiverSpeed: sample.report?.speed)
        }
        configuration.machineStatus = {
            let snapshot = watcher.machineSnapshot()
            guard snapshot.everHeard else { return nil }
            let reading = rules.reading(snapshot, workSwitch: false, receiverSpeed: nil)
            return Heartbeat.MachineStatus(
                work: reading.work.rawValue, tractorECU: snapshot.tractorECU.map(Int.init), engine: snapshot.engine.map(Int.init),
                signals: MachineSignal.allCases.compactMap { signal in
                    snapshot[signal].map {
                        .init(signal: signal.rawValue, value: $0.message.text, source: Int($0.source), ageSeconds: ($0.age * 10).rounded() / 10)
                    }
                },
                notHeard: MachineSignal.allCases.filter { snapshot[$0] == nil }.map(\.rawValue))
        }
    }
}
