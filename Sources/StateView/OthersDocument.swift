import Clocks
import Foundation
import GNSS
import JSONText
import StateDirectory

/// `agrigps others --json`: the listing for scripts, every key always there and unknowns null.
public struct OthersDocument: Encodable, Sendable {
    struct Machine: Encodable {
        var endpoint_id: String
        @Nullable var name: String?
        var state: String
        @Nullable var fix: String?
        @Nullable var position_status: String?
        @Nullable var latitude: Double?
        @Nullable var longitude: Double?
        @Nullable var altitude_m: Double?
        @Nullable var position_time: String?
        @Nullable var report_time: String?
        @Nullable var last_received_at: String?
        @Nullable var age_s: Double?
        @Nullable var distance_m: Double?
        @Nullable var bearing_deg: Double?
    }

    struct OwnPosition: Encodable {
        var latitude: Double
        var longitude: Double
        @Nullable var time: String?
    }

    struct NotShown: Encodable {
        var inactive: Int
        var unlocated: Int
    }

    // The keys are the JSON's own: snake_case, as scripts have read them since the first release.
    @Nullable var generated_at: String?
    @Nullable var own_position: OwnPosition?
    @Nullable var own_name: String?
    @Nullable var last_update: String?
    var machines: [Machine]
    var not_shown: NotShown
    var refused_messages: Int

    public init(_ listing: OthersListing, view: OthersView, ownFix: Heartbeat.Sample?, now: Date) {
        let date = ISO8601UTC.string(ifAny:)
        // Range-checked where they were read; a value that is still not finite is unknown.
        let finite = { (number: Double?) in number.flatMap { $0.isFinite ? $0 : nil } }
        machines = listing.entries.map { entry in
            let machine = entry.machine
            return Machine(
                endpoint_id: machine.endpointID, name: machine.name, state: machine.activity.rawValue,
                fix: machine.lastReport?.statusDescription, position_status: machine.lastReport?.status,
                latitude: finite(machine.lastPosition?.latitude), longitude: finite(machine.lastPosition?.longitude),
                altitude_m: finite(machine.lastPosition?.altitude), position_time: date(machine.lastPosition?.gnssTime),
                report_time: date(machine.lastReport?.gnssTime), last_received_at: date(machine.lastReceivedAt),
                age_s: finite(entry.age.map { ($0 * 10).rounded() / 10 }),
                distance_m: finite(entry.distance?.rounded()),
                bearing_deg: finite(entry.bearing?.rounded()))
        }
        generated_at = date(now)
        own_position = ownFix?.coordinate.map {
            OwnPosition(latitude: $0.latitude, longitude: $0.longitude, time: date(ownFix?.time))
        }
        own_name = view.ownName
        last_update = date([view.lastReceivedAt, view.endpointsListedAt].compactMap { $0 }.max())
        not_shown = NotShown(inactive: listing.hiddenInactive, unlocated: listing.hiddenUnlocated)
        refused_messages = view.refusedMessages
    }
}
