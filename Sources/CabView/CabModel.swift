import Bounds
import Clocks
import Foundation
import GNSS
import Spool
import StateDirectory
import StateView
import Track

/// What the page shows, as the browser receives it (GET /api/state and every SSE `state` event).
/// No secret is ever in it: no key, no passphrase, no TAN; the endpoint's name and id are not secret.
struct CabModel: Codable, Equatable, Sendable {
    struct Own: Codable, Equatable, Sendable {
        var latitude: Double
        var longitude: Double
        /// rtk_fixed, rtk_float, dgps, autonomous, or none when this is the last position before the fix was lost.
        var fix: String
        var fixText: String
        /// True when the receiver has no fix now: the position shown is the last one known.
        var old: Bool
        var time: String?
        var speed: Double?
        var satellites: Int?
        var hdop: Double?
        /// Course over ground, whole degrees clockwise from north in 0..<360; nil when the position
        /// is old or the machine slower than `CabModel.headingSpeed`.
        var heading: Double?
    }

    struct Other: Codable, Equatable, Sendable {
        var id: String
        var name: String
        var latitude: Double?
        var longitude: Double?
        /// When it was at that position, by its own report (ISO 8601 UTC).
        var positionTime: String?
        /// active, stale, gone or silent.
        var state: String
        /// The fix it reported, by our code ("rtk_fixed", "dgps"; see `FixWords`), and in English words.
        var fix: String?
        var fixText: String?
        var ageSeconds: Double?
        var age: String
        var distance: String?
        var distanceMetres: Double?
        /// The farm's field it is in; nil off every field, or with none known.
        var field: String?
        /// Whole degrees clockwise from north, from this machine to it, in 0..<360; nil when either
        /// position is unknown.
        var bearing: Double?
        /// The same as `agrigps others` writes it: "NE 52°".
        var direction: String?
    }

    struct Settings: Codable, Equatable, Sendable {
        var onboarded: Bool
        var environment: String?
        var endpointName: String?
        var certificateValidUntil: String?
        /// The environments this page may onboard to; the choice is locked while onboarded.
        var environments: [String]
        /// The running gateway has not taken this onboarding yet (one replaying a recording never
        /// does): the page says so rather than "Connected".
        var waitingForGateway = false
    }

    var takenAt: String
    var health: String
    var reasons: [String]
    var sharing: SharingIndicator
    var own: Own?
    var others: [Other]
    var lastUpdate: String?
    var settings: Settings
    var staleAfterSeconds: Double
    /// The field this machine is in ("In: Nordacker"); nil on the road, or with no fields known.
    var field: String?
    /// Whether any field is known: without, the page says nothing of fields.
    var fieldsKnown = false
    /// Moves on when the fields change: the page then fetches /api/fields again.
    var fieldsVersion = 0
    var work: Work
}

extension CabModel {
    /// What the machine is doing, as the newest sample carries it, and the driver's work switch.
    struct Work: Codable, Sendable, Equatable {
        /// "working", "not-working", "road" (not working, moving off every known field) or
        /// "unknown"; nil when nothing (no bus, no switch used) says.
        var state: String?
        /// The work switch: nil until first used.
        var switchOn: Bool?
        /// Whether the switch counts ([machine] work_signals has "switch"): the page offers it then.
        var switchCounts = true
        /// Metres the implement works, for Records' worked area: the configuration's, else what the
        /// driver gave in Settings; nil, neither.
        var width: Double?
        /// Whether the width is the configuration's ([machine] working_width): Settings shows it, not a field to change.
        var widthConfigured = false
        /// What the machine's bus gives, for Settings, as the daemon's heartbeat last listed it: the
        /// controllers, each signal (`MachineSignal`'s name, the box's words for its value), what was
        /// not heard, a bus problem. Nil without a bus heard.
        var bus: Heartbeat.MachineStatus?
    }
}

extension CabModel {
    /// Builds the model from what the state directory says now.
    init(
        snapshot: StatusSnapshot, newest: PositionSample?, lastFix: PositionSample?, thresholds: StatusThresholds,
        environments: [String]
    ) {
        let lastState = newest?.state ?? snapshot.heartbeat?.lastSample.flatMap { FixState(name: $0.state) }
        // The technical details judged by the same newest sample as the label: never calmer than it.
        let verdict = snapshot.verdict(thresholds, lastState: lastState)
        let now = snapshot.takenAt
        takenAt = ISO8601UTC.string(from: now)
        health = verdict.health.description
        reasons = verdict.reasons
        sharing = SharingIndicator(snapshot, lastState: lastState, thresholds: thresholds)
        own = Self.own(newest: newest, lastFix: lastFix, heartbeat: snapshot.heartbeat)
        // With the daemon stopped (or stuck), the newest position is the last one known, however good its fix was.
        if sharing.state == .daemonStopped, var stopped = own, !stopped.old {
            stopped.old = true
            stopped.fix = "none"
            stopped.fixText = "gateway stopped: last known position"
            stopped.heading = nil  // an old position has no heading: the machine may since have turned
            own = stopped
        }
        let ownCoordinate = own.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) }
        let listing = OthersListing(view: snapshot.others, ownPosition: ownCoordinate, now: now, includeStale: true)
        others = listing.entries.map { entry in
            let machine = entry.machine
            return Other(
                id: machine.endpointID, name: machine.name ?? machine.endpointID,
                latitude: machine.coordinate?.latitude, longitude: machine.coordinate?.longitude,
                positionTime: machine.lastPosition?.gnssTime.map { ISO8601UTC.string(from: $0) },
                state: machine.activity.rawValue, fix: machine.lastReport?.statusDescription,
                fixText: machine.lastReport.map { FixWords.words(forCode: $0.statusDescription) },
                ageSeconds: entry.age.map { max(0, $0.rounded()) }, age: entry.age.map(durationText) ?? "never",
                distance: entry.distance.map { DistanceText.format(metres: $0) }, distanceMetres: entry.distance,
                bearing: entry.bearing.flatMap(BearingText.wholeDegrees).map(Double.init),
                direction: entry.bearing.map(BearingText.format(degrees:)))
        }
        lastUpdate = snapshot.others.lastReceivedAt.map { ISO8601UTC.string(from: $0) }
        settings = Settings(
            onboarded: snapshot.environment != nil, environment: snapshot.environment,
            endpointName: snapshot.othersCounts.ownName,
            certificateValidUntil: snapshot.certificateNotAfter.map { String(ISO8601UTC.string(from: $0).prefix(10)) },
            environments: environments, waitingForGateway: snapshot.credentialsNotTaken)
        staleAfterSeconds = thresholds.staleAfter
        work = Work(
            state: newest?.machine?.work.rawValue, switchOn: snapshot.spool?.workSwitch,
            width: snapshot.spool?.workingWidth,
            bus: snapshot.heartbeat?.machine)
    }

    /// Not working and moving off every known field: the road, by the rule Records count it with.
    mutating func placeWork(speedOverGround: Double?) {
        guard work.state == "not-working", fieldsKnown, field == nil, own.map({ !$0.old }) == true,
            let speed = speedOverGround, speed > TrackRules().movingSpeed
        else { return }
        work.state = "road"
    }

    /// Below this speed (m/s, about 1.8 km/h) a receiver's track is noise: a standing machine's
    /// heading would swing at every fix.
    static let headingSpeed = 0.5

    /// Our marker: the newest sample with a fix, or, without a fix now, the last known position marked old.
    static func own(newest: PositionSample?, lastFix: PositionSample?, heartbeat: Heartbeat?) -> Own? {
        if let newest, newest.state.hasPosition, let own = Own(newest, old: false) { return own }
        if let lastFix, let own = Own(lastFix, old: true) { return own }
        guard let fix = heartbeat?.lastFix, let coordinate = fix.coordinate else { return nil }
        return Own(
            latitude: coordinate.latitude, longitude: coordinate.longitude, fix: "none", fixText: "last known position",
            old: true, time: ISO8601UTC.string(from: fix.time))
    }
}

extension CabModel.Own {
    init?(_ sample: PositionSample, old: Bool) {
        guard let report = sample.report, let latitude = report.latitude, let longitude = report.longitude,
            Bounds.latitude.contains(latitude), Bounds.longitude.contains(longitude)
        else { return nil }
        self.latitude = latitude
        self.longitude = longitude
        if old {
            fix = "none"
            fixText = "no fix now: last known position"
        } else {
            (fix, fixText) = Self.quality(sample.state)
        }
        self.old = old
        time =
            (sample.receiverTime ?? sample.sampledAt).timeIntervalSince1970 > 0
            ? ISO8601UTC.string(from: sample.receiverTime ?? sample.sampledAt) : nil
        speed = report.speed
        satellites = report.satellitesUsed
        hdop = report.hdop
        heading = Self.heading(report, old: old)
    }

    /// The track (already checked to 0...360 by `PositionReport`) as whole degrees, only while the
    /// position is current and the machine moves.
    static func heading(_ report: PositionReport, old: Bool) -> Double? {
        guard !old, let speed = report.speed, speed >= CabModel.headingSpeed, let track = report.track else {
            return nil
        }
        return BearingText.wholeDegrees(track).map(Double.init)
    }

    /// The page's class for the marker's colour, and the words it shows (those of `agrigps others`).
    static func quality(_ state: FixState) -> (String, String) {
        guard case .fix(_, let quality) = state else { return ("none", "no fix") }
        switch quality {
        case .rtkFixed, .rtkFloat, .dgps, .autonomous: return (quality.rawValue, FixWords.words(state))
        case .deadReckoning, .simulated, .manual: return ("autonomous", FixWords.words(state))
        }
    }
}
