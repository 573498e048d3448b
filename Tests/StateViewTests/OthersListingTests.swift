import AgrirouterWire
import Foundation
import GNSS
import StateDirectory
import Testing

@testable import StateView

@Suite("Listing the others")
struct OthersListingTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    func machine(
        _ name: String?, id: String, at coordinate: Coordinate?, heard: Double?,
        activity: OtherMachine.Activity = .active
    ) -> OtherMachine {
        let position = coordinate.map {
            ReportedPosition(status: "D_GNSS", latitude: $0.latitude, longitude: $0.longitude)
        }
        return OtherMachine(
            endpointID: id, name: name, lastReport: position, lastPosition: position,
            lastReceivedAt: heard.map { now.addingTimeInterval(-$0) }, leftListAt: nil, activity: activity)
    }

    var view: OthersView {
        OthersView(machines: [
            machine("Sprayer", id: "c", at: Coordinate(latitude: 52.02, longitude: 8), heard: 5),
            machine("Harvester", id: "a", at: Coordinate(latitude: 52.001, longitude: 8), heard: 50),
            machine(nil, id: "b", at: nil, heard: 1),
            machine("Baler", id: "d", at: Coordinate(latitude: 52.0005, longitude: 8), heard: 900, activity: .stale),
        ])
    }

    @Test("sorted by distance, unknown distances last; by name; by age")
    func sorting() {
        let here = Coordinate(latitude: 52, longitude: 8)
        #expect(
            OthersListing(view: view, ownPosition: here, now: now).entries.map(\.machine.endpointID) == ["a", "c", "b"])
        #expect(
            OthersListing(view: view, ownPosition: here, now: now, order: .name).entries.map(\.machine.endpointID) == [
                "a", "c", "b",
            ])
        #expect(
            OthersListing(view: view, ownPosition: here, now: now, order: .age).entries.map(\.machine.endpointID) == [
                "b", "c", "a",
            ])
        #expect(
            OthersListing(view: view, ownPosition: here, now: now, includeStale: true).entries.map(\.machine.endpointID)
                == ["d", "a", "c", "b"])
    }

    @Test("--near keeps what is within reach and counts what has no position")
    func near() {
        let listing = OthersListing(
            view: view, ownPosition: Coordinate(latitude: 52, longitude: 8), now: now, near: 500)
        #expect(listing.entries.map(\.machine.endpointID) == ["a"])
        #expect(listing.hiddenUnlocated == 1 && listing.hiddenInactive == 1)
    }

    @Test("without our own position nothing has a distance")
    func noOwnPosition() {
        let listing = OthersListing(view: view, ownPosition: nil, now: now)
        #expect(listing.entries.allSatisfy { $0.distance == nil && $0.bearing == nil })
        #expect(listing.entries.first { $0.machine.endpointID == "a" }?.age == 50)
    }

    @Test(
        "distances as typed",
        arguments: [
            ("500m", 500.0), ("2km", 2000), ("1.5 km", 1500), ("300", 300), ("0", 0), ("1mi", 1609.344), ("2KM", 2000),
        ])
    func distances(text: String, metres: Double) throws {
        #expect(try DistanceText.metres(text) == metres)
    }

    @Test(
        "bad distances",
        arguments: [
            ("-1km", DistanceText.ParseError.negative("-1km")), ("10ft", .unknownUnit("10ft", unit: "ft")),
            ("km", .notANumber("km")), ("", .empty), ("nan", .notANumber("nan")), ("1e999m", .notANumber("1e999m")),
        ])
    func badDistances(text: String, error: DistanceText.ParseError) {
        #expect(throws: error) { try DistanceText.metres(text) }
    }
}
