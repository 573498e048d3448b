import Fields
import Foundation
import StateFiles
import StateView

/// The farm's fields as the page draws them, and which field each machine is in.
///
/// Read from STATE-DIR/fields.sqlite (read-only), again whenever the file changes; the lookup is an
/// index (bounding boxes first), so looking every machine up at every model costs microseconds.
struct CabFields: Sendable {
    private(set) var index = FieldIndex<StoredField>([])
    private(set) var fields: [StoredField] = []
    /// Moves on with every change of the store, so that the page fetches the fields again.
    private(set) var version = 0
    private var stamp: [FileStamp] = []
    /// The field each machine was in at the last look ("" for none), by machine id.
    private var where_: [String: String] = [:]

    /// Whether the store's files changed since they were last read.
    func changed(_ now: [FileStamp]) -> Bool { now != stamp }

    /// Takes what the store read at `stamp`; nil (it could not be read) keeps what was read before.
    mutating func take(_ read: [StoredField]?, stamp now: [FileStamp]) {
        stamp = now
        guard let read, read != fields else { return }
        fields = read
        index = FieldIndex(read.map { (value: $0, field: $0.field) })
        version += 1
    }

    /// The name of the field holding this position; nil off every field.
    func field(latitude: Double?, longitude: Double?) -> String? {
        guard let latitude, let longitude else { return nil }
        return index.field(containing: latitude, longitude: longitude)?.field.name
    }

    /// A machine entered a field, or left it.
    struct Change: Equatable {
        var entered: Bool
        var field: String
    }

    /// Notes where `machine` is now; returns what to announce when it entered or left a field
    /// (once each: the next look at the same field says nothing). The first look at a machine
    /// announces nothing: it was already there.
    mutating func moved(_ machine: String, to field: String?) -> Change? {
        let now = field ?? ""
        defer { where_[machine] = now }
        guard let before = where_[machine], before != now else { return nil }
        if now.isEmpty { return Change(entered: false, field: before) }
        return Change(entered: true, field: now)
    }

    /// The fields as GeoJSON, in [longitude, latitude] order: outer rings with their holes.
    func geoJSON() -> FieldsGeoJSON {
        FieldsGeoJSON(
            version: version,
            features: fields.map { stored in
                let field = stored.field
                let polygons = field.boundaries.map { boundary in
                    [boundary.points.map { [$0.longitude, $0.latitude] }]
                        + field.holes.filter { hole in hole.points.first.map { boundary.contains($0) } ?? false }
                        .map { $0.points.map { [$0.longitude, $0.latitude] } }
                }
                return FieldsGeoJSON.Feature(
                    properties: .init(
                        id: stored.id, name: field.name, farm: field.farm,
                        areaHectares: (field.area / 100).rounded() / 100),
                    geometry: .init(coordinates: polygons))
            })
    }
}

/// GET /api/fields.
struct FieldsGeoJSON: Encodable, Sendable {
    struct Feature: Encodable, Sendable {
        struct Properties: Encodable, Sendable {
            var id: Int64
            var name: String
            @Nullable var farm: String?
            var areaHectares: Double
        }

        struct Geometry: Encodable, Sendable {
            var type = "MultiPolygon"
            var coordinates: [[[[Double]]]]
        }

        var type = "Feature"
        var properties: Properties
        var geometry: Geometry
    }

    var type = "FeatureCollection"
    var version: Int
    var features: [Feature]
}
