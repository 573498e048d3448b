import GNSS

/// What the machine is doing, as Records count it and TimeLogs carry it (DDI 141).
public enum WorkState: String, Sendable, Equatable, CaseIterable {
    /// An implement is in work (by a counted signal) and the machine moves.
    case working
    /// Standing, or moving in a field with no implement in work.
    case notWorking = "not-working"
    /// Moving outside every field, not working.
    case road
    /// None of the counted signals is known: the bus is silent and no work switch counts.
    case unknown
}

/// A signal that can say an implement is in work.
public enum WorkSignal: String, Sendable, CaseIterable {
    case rearHitch = "rear-hitch", frontHitch = "front-hitch", rearPTO = "rear-pto", frontPTO = "front-pto"
    /// The tractor's implement start/stop operations (wheel-based speed's SPN 5203).
    case implementOperations = "implement-operations"
    /// The driver's own switch in the cab view. On, it says in work; off, it says not in work only on a
    /// machine whose bus never spoke.
    case workSwitch = "switch"
}

/// The rules that turn readings into a work state, as `[machine]` in the configuration sets them.
public struct WorkRules: Sendable, Equatable {
    /// The signals that count; any one of them in work is enough.
    public var signals: Set<WorkSignal>
    /// Metres a second the machine must move for work to count (default 1 km/h): a tractor standing
    /// at the field's edge with its PTO running is not working the field.
    public var minimumSpeed: Double

    public static let defaultMinimumSpeed = 1 / 3.6

    public init(signals: Set<WorkSignal> = Set(WorkSignal.allCases), minimumSpeed: Double = Self.defaultMinimumSpeed) {
        self.signals = signals
        self.minimumSpeed = minimumSpeed
    }

    /// The work state now. `speed` is the machine's in metres a second, from the bus or else from the
    /// receiver (nil when neither knows); `insideField` is nil when no field is known, so that a farm
    /// without a map never reads as road.
    public func state(_ snapshot: MachineSnapshot, workSwitch: Bool, speed: Double?, insideField: Bool?) -> WorkState {
        let inWork = signals.map { reading($0, in: snapshot, workSwitch: workSwitch) }
        let moving = speed.map { abs($0) >= minimumSpeed }
        // In work while moving outside every known field is still work: a field the map lacks.
        if inWork.contains(true), moving == true { return .working }
        if moving == true, insideField == false { return .road }
        if inWork.contains(true), moving == nil { return .unknown }
        return inWork.contains(false) || inWork.contains(true) ? .notWorking : .unknown
    }

    /// Whether `signal` says in work now; nil when it does not know.
    private func reading(_ signal: WorkSignal, in snapshot: MachineSnapshot, workSwitch: Bool) -> Bool? {
        switch signal {
        case .rearHitch: return snapshot.rearHitch?.inWork.value
        case .frontHitch: return snapshot.frontHitch?.inWork.value
        case .rearPTO: return snapshot.rearPTO?.engaged.value
        case .frontPTO: return snapshot.frontPTO?.engaged.value
        case .implementOperations:
            if case .wheelBasedSpeed(let speed)? = snapshot[.wheelBasedSpeed]?.message {
                return speed.implementOperations?.value
            }
            return nil
        // Off is the driver's word only on a machine that broadcasts nothing: where the bus spoke and
        // fell silent, a switch left off must not turn "no word" into "not working".
        case .workSwitch: return workSwitch ? true : snapshot.everHeard ? nil : false
        }
    }
}

extension WorkRules {
    /// What a sample carries of the machine: the work state without fields (road is told from the
    /// track and the farm's fields when Records are made), and the bus's speed, engine and fuel.
    /// `receiverSpeed` (metres a second) stands in where the bus gives no speed.
    public func reading(_ snapshot: MachineSnapshot, workSwitch: Bool, receiverSpeed: Double?) -> MachineReading {
        let busSpeed = snapshot.speed
        let state = state(
            snapshot, workSwitch: workSwitch, speed: busSpeed?.metresPerSecond ?? receiverSpeed, insideField: nil)
        let work: MachineReading.Work = state == .working ? .working : state == .unknown ? .unknown : .notWorking
        let source: String? =
            switch busSpeed?.signal {
            case .machineSelectedSpeed?: "selected"
            case .groundBasedSpeed?: "ground"
            case .wheelBasedSpeed?: "wheel"
            default: nil
            }
        return MachineReading(
            work: work, speed: busSpeed?.metresPerSecond, speedSource: source, engineSpeed: snapshot.engineSpeed,
            engineHours: snapshot.engineHours, fuelRate: snapshot.fuelRate, fuelUsed: snapshot.fuelUsed)
    }
}
