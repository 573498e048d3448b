import GNSS

/// Finds the GNSS receiver on a bus by listening: which source addresses send positions (PGN 129029
/// or 129025), what each says of its fix, and who made it (the NAME of its address claim). gpsd 3.22
/// takes the first sender it hears unless given one; this says which to give it.
public struct ReceiverFinder: Sendable {
    /// What one source address has been heard sending.
    public struct Sender: Sendable {
        public var address: UInt8
        public var frames = 0
        public var positionData = 0
        public var positionRapid = 0
        public var dops = 0
        public var name: DeviceName?
        /// The newest 129029.
        public var lastPositionData: GNSSPositionData?
        /// The newest positions of either PGN, oldest first: about a second's worth, to tell whose a
        /// report of gpsd's is by its position.
        public private(set) var recentPositions: [(latitude: Double, longitude: Double)] = []
        static let positionsKept = 12

        public var lastPosition: (latitude: Double, longitude: Double)? { recentPositions.last }

        mutating func note(latitude: Double, longitude: Double) {
            if recentPositions.count >= Self.positionsKept { recentPositions.removeFirst() }
            recentPositions.append((latitude, longitude))
        }

        /// Whether this sender gave the position lately (to within 129025's resolution, 1e-7°).
        public func sent(latitude: Double, longitude: Double) -> Bool {
            recentPositions.contains { abs($0.latitude - latitude) <= 2e-7 && abs($0.longitude - longitude) <= 2e-7 }
        }

        public var sendsPositions: Bool { positionData + positionRapid > 0 }

        /// Missing PGNs a user must know of: without 129029 there is no fix quality, without 129539
        /// gpsd reports no fix mode at all.
        public var missing: [String] {
            (positionData == 0 ? ["129029 (fix quality)"] : []) + (dops == 0 ? ["129539 (fix mode)"] : [])
        }

        /// "2 (Garmin)", or the address alone where no NAME was heard.
        public var label: String {
            "\(address)" + (name.map { " (\($0.manufacturer))" } ?? "")
        }
    }

    public private(set) var senders: [UInt8: Sender] = [:]
    public private(set) var frames = 0
    private var joiner = FastPacketJoiner()

    public init() {}

    /// Takes one frame; the 129029 it completes, if it completes one.
    @discardableResult
    public mutating func add(_ frame: CANFrame) -> GNSSPositionData? {
        frames += 1
        var sender = senders[frame.source] ?? Sender(address: frame.source)
        sender.frames += 1
        defer { senders[frame.source] = sender }
        let pgn = frame.pgn
        // Only 129029 is joined: the other fast packets on a bus (129540's satellites, say) are not read.
        let message: [UInt8]? = pgn == GNSSPGN.positionData ? joiner.add(frame) : frame.data
        switch (pgn, message) {
        case (GNSSPGN.positionData, let bytes?):
            if let data = GNSSPositionData(bytes) {
                sender.positionData += 1
                sender.lastPositionData = data
                if let latitude = data.latitude, let longitude = data.longitude {
                    sender.note(latitude: latitude, longitude: longitude)
                }
                return data
            }
        case (GNSSPGN.positionRapid, let bytes?):
            if let rapid = GNSSPositionRapid(bytes) {
                sender.positionRapid += 1
                sender.note(latitude: rapid.latitude, longitude: rapid.longitude)
            }
        case (GNSSPGN.dops, let bytes?):
            if GNSSDOPs(bytes) != nil { sender.dops += 1 }
        case (GNSSPGN.addressClaim, let bytes?):
            sender.name = DeviceName(bytes)
        default:
            break
        }
        return nil
    }

    /// Every sender of positions, the chosen first: one that sends 129029 (its fix quality) before
    /// one that sends only 129025; then the better fix by 129029's method (RTK fixed, RTK float,
    /// DGNSS, a plain fix, dead reckoning, none); then the one heard most; then the lower address.
    public var receivers: [Sender] {
        senders.values.filter(\.sendsPositions).sorted { a, b in
            let keyA = (
                a.positionData > 0 ? 0 : 1, Self.rank(a.lastPositionData?.method), -(a.positionData + a.positionRapid),
                Int(a.address)
            )
            let keyB = (
                b.positionData > 0 ? 0 : 1, Self.rank(b.lastPositionData?.method), -(b.positionData + b.positionRapid),
                Int(b.address)
            )
            return keyA < keyB
        }
    }

    public var chosen: Sender? { receivers.first }

    /// Whether any sender has sent positions: `chosen` without the sorting.
    public var hasReceiver: Bool { senders.values.contains { $0.sendsPositions } }

    static func rank(_ method: GNSSPositionData.Method?) -> Int {
        switch method {
        case .rtkFixed: return 0
        case .rtkFloat: return 1
        case .dgnss, .preciseGNSS: return 2
        case .gnss: return 3
        case .deadReckoning: return 4
        case .manual, .simulated: return 5
        case .noGNSS, .error, .notAvailable, nil: return 6
        }
    }

    /// One line for `status` and the journal: which receiver, why, what else is there.
    public var summary: String {
        guard let chosen else {
            let heard = senders.keys.sorted().map(String.init).joined(separator: ", ")
            let counted = frames == 1 ? "1 frame from address" : "\(frames) frames from addresses"
            return frames == 0
                ? "no frames on the bus"
                : "no GNSS receiver: \(counted) \(heard), none with a position (PGN 129029 or 129025)"
        }
        var line = "GNSS receiver at address \(chosen.label)"
        if !chosen.missing.isEmpty { line += "; it sends no " + chosen.missing.joined(separator: " and no ") }
        let others = receivers.dropFirst().map(\.label)
        if !others.isEmpty { line += "; also sending positions: \(others.joined(separator: ", ")), not read" }
        return line
    }
}
