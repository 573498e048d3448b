import CANBus
import GNSS
import Gateway
import Machine
import StateDirectory

/// The machine's side of the daemon: a reading for each sample and the lines of status. From a bus
/// listener, with the work switch beside it; without a bus, from the work switch alone. A bus that
/// never carried a machine's message, with a switch never used, gives neither: a receiver alone on
/// its bus, or a boat's, has no machine.
enum MachineWiring {
    /// `ownBus`: the watcher listens to a bus of the machine's alone (`[machine] bus`), whose problems
    /// status says even before anything was heard.
    static func attach(
        _ watcher: BusWatcher, rules: WorkRules = WorkRules(), ownBus: Bool = false,
        to configuration: inout GatewayDaemon.Configuration
    ) {
        configuration.machine = { sample, workSwitch in
            // As the machine was at the sample's fix: the sample may be taken a while after it came.
            let snapshot = sample.report?.time.flatMap(watcher.machineSnapshot(atFix:)) ?? watcher.machineSnapshot()
            guard snapshot.everHeard || workSwitch != nil else { return nil }
            return rules.reading(snapshot, workSwitch: workSwitch ?? false, receiverSpeed: sample.report?.speed)
        }
        configuration.machineStatus = {
            let snapshot = watcher.machineSnapshot()
            let problem = ownBus ? watcher.problem : nil
            guard snapshot.everHeard || problem != nil else { return nil }
            // The work state itself is the newest sample's, with the switch: the heartbeat puts it in.
            return Heartbeat.MachineStatus(
                work: MachineReading.Work.unknown.rawValue, tractorECU: snapshot.tractorECU.map(Int.init),
                engine: snapshot.engine.map(Int.init),
                signals: snapshot.heard.map { signal, observed in
                    .init(
                        signal: signal.rawValue, value: observed.message.text, source: Int(observed.source),
                        ageSeconds: (observed.age * 10).rounded() / 10)
                },
                notHeard: snapshot.notHeard.map(\.rawValue), busProblem: problem)
        }
    }

    /// A machine with no bus listened to: the driver's work switch says whether it works, once used.
    static func attachSwitch(rules: WorkRules = WorkRules(), to configuration: inout GatewayDaemon.Configuration) {
        configuration.machineBySwitchOnly = true
        configuration.machine = { sample, workSwitch in
            guard let workSwitch else { return nil }
            return rules.reading(MachineSnapshot(), workSwitch: workSwitch, receiverSpeed: sample.report?.speed)
        }
    }
}
