import AgrirouterWire
import Foundation
import GNSS

/// Another machine as this gateway last heard of it.
public struct OtherMachine: Sendable, Equatable {
    public enum Activity: String, Sendable {
        /// Heard from within the stale threshold.
        case active
        /// Nothing heard for longer than the threshold, by this gateway's own clock.
        case stale
        /// It was in agrirouter's endpoint list and has left it.
        case gone
        /// Listed, but nothing heard from it yet.
        case silent
    }

    public var endpointID: String
    /// Its name in agrirouter; nil until the endpoint list names it.
    public var name: String?
    /// Its newest report (by GNSS time), which says what its receiver knew, position or not.
    public var lastReport: ReportedPosition?
    /// Its newest report that had a position.
    public var lastPosition: ReportedPosition?
    /// When this gateway last received anything from it (local clock).
    public var lastReceivedAt: Date?
    public var leftListAt: Date?
    public var activity: Activity

    public init(
        endpointID: String, name: String?, lastReport: ReportedPosition?, lastPosition: ReportedPosition?,
        lastReceivedAt: Date?, leftListAt: Date?, activity: Activity
    ) {
        self.endpointID = endpointID
        self.name = name
        self.lastReport = lastReport
        self.lastPosition = lastPosition
        self.lastReceivedAt = lastReceivedAt
        self.leftListAt = leftListAt
        self.activity = activity
    }

    public var coordinate: Coordinate? {
        guard let latitude = lastPosition?.latitude, let longitude = lastPosition?.longitude else { return nil }
        return Coordinate(latitude: latitude, longitude: longitude)
    }

    /// How a machine's state is judged: by local receive time, so a sender's wrong clock cannot make
    /// an old position look live.
    static func activity(lastReceivedAt: Date?, leftListAt: Date?, now: Date, staleAfter: Double) -> Activity {
        if leftListAt != nil { return .gone }
        guard let lastReceivedAt else { return .silent }
        return now.timeIntervalSince(lastReceivedAt) > staleAfter ? .stale : .active
    }
}

/// Everything `agrigps others` and status show, read at one moment.
public struct OthersView: Sendable, Equatable {
    public var machines: [OtherMachine]
    /// Our own name in agrirouter, from the endpoint list.
    public var ownName: String?
    public var endpointsListedAt: Date?
    /// The newest message received from anyone.
    public var lastReceivedAt: Date?
    /// Messages from other machines refused since the store was made (unreadable or out of range),
    /// and the last reason, with its sender.
    public var refusedMessages: Int
    public var lastRefusal: String?

    public init(
        machines: [OtherMachine] = [], ownName: String? = nil, endpointsListedAt: Date? = nil,
        lastReceivedAt: Date? = nil,
        refusedMessages: Int = 0, lastRefusal: String? = nil
    ) {
        self.machines = machines
        self.ownName = ownName
        self.endpointsListedAt = endpointsListedAt
        self.lastReceivedAt = lastReceivedAt
        self.refusedMessages = refusedMessages
        self.lastRefusal = lastRefusal
    }

    public func count(_ activity: OtherMachine.Activity) -> Int {
        machines.count { $0.activity == activity }
    }
}
