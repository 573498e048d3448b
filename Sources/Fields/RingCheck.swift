import Foundation

/// Whether a ring can be a field's outline or hole: no wider than a farm, passing through no point
/// twice, and crossing or touching itself nowhere. A ring that fails would be drawn and measured
/// wrongly: a bow tie's two lobes cancel to 0 ha, and a ring that goes round the same points a
/// thousand times has a thousand times its area.
///
/// Every step is linear in the ring's points, or close to it: the crossing test hashes each edge
/// into cells about as large as an edge, so that only edges near each other are compared, and it
/// stops with "too intricate" past a fixed number of comparisons per point, whatever the file holds.
enum RingCheck {
    /// The widest a field is taken to be, north to south or east to west. The largest paddocks
    /// farmed are a few kilometres across; a ring wider than this is a mistake or a trick.
    static let maximumExtentMetres = 50_000.0
    /// Pairs of edges compared per point before the ring is called too intricate to check.
    static let comparisonsPerPoint = 64
    static let metresPerDegree = 111_320.0

    /// Why the ring cannot be used, in words for the person who exported it; nil when it can.
    static func problem(_ ring: Ring) -> String? {
        let points = ring.points
        guard let first = points.first else { return "it has no points" }
        // Longitudes relative to the first point, so that a ring across 180° is one piece.
        let planar = points.map { (x: Ellipsoid.wrappedDegrees($0.longitude - first.longitude), y: $0.latitude) }
        if let problem = extentProblem(planar) { return problem }
        var seen: [GeoPoint: Int] = [:]
        seen.reserveCapacity(points.count)
        for (index, point) in points.enumerated() {
            if let earlier = seen.updateValue(index, forKey: point) {
                return
                    "it passes through the same point twice (points \(earlier + 1) and \(index + 1) of \(points.count)); "
                    + "correct the boundary in the farm software"
            }
        }
        return crossingProblem(planar)
    }

    private static func extentProblem(_ planar: [(x: Double, y: Double)]) -> String? {
        var minimum = (x: Double.infinity, y: Double.infinity)
        var maximum = (x: -Double.infinity, y: -Double.infinity)
        for point in planar {
            minimum = (min(minimum.x, point.x), min(minimum.y, point.y))
            maximum = (max(maximum.x, point.x), max(maximum.y, point.y))
        }
        let widestLatitude = max(abs(minimum.y), abs(maximum.y))
        // East to west measured where the ring is narrowest in metres per degree, so never less than it is.
        let eastWest = (maximum.x - minimum.x) * metresPerDegree * cos(min(widestLatitude, 89.9) * .pi / 180)
        let northSouth = (maximum.y - minimum.y) * metresPerDegree
        let widest = max(eastWest, northSouth)
        guard widest > maximumExtentMetres else { return nil }
        return "it spans \(Int(widest / 1000)) km, more than the \(Int(maximumExtentMetres / 1000)) km a field can be; "
            + "check its coordinates in the farm software"
    }

    /// A crossing or touching of two edges, found by comparing only edges that share a cell.
    private static func crossingProblem(_ planar: [(x: Double, y: Double)]) -> String? {
        let count = planar.count
        guard count >= 3 else { return nil }
        func edge(_ index: Int) -> (a: (x: Double, y: Double), b: (x: Double, y: Double)) {
            (planar[index], planar[index + 1 == count ? 0 : index + 1])
        }
        // Cells about twice the mean edge, so that most edges lie in one to four of them.
        var total = 0.0
        for index in 0..<count {
            let (a, b) = edge(index)
            total += max(abs(b.x - a.x), abs(b.y - a.y))
        }
        var cellSize = max(2 * total / Double(count), 1e-9)
        var cells: [Int64: [Int32]] = [:]
        // A few very long edges would cover many cells: the cells grow until the edges fit a budget.
        while true {
            cells.removeAll(keepingCapacity: true)
            var entries = 0
            let budget = 8 * count + 10_000
            for index in 0..<count {
                let (a, b) = edge(index)
                let (x0, x1) = (cell(min(a.x, b.x), cellSize), cell(max(a.x, b.x), cellSize))
                let (y0, y1) = (cell(min(a.y, b.y), cellSize), cell(max(a.y, b.y), cellSize))
                entries += (x1 - x0 + 1) * (y1 - y0 + 1)
                if entries > budget { break }
                for x in x0...x1 {
                    for y in y0...y1 {
                        cells[Int64(x) << 32 | Int64(UInt32(bitPattern: Int32(truncatingIfNeeded: y))), default: []]
                            .append(Int32(index))
                    }
                }
            }
            if entries <= budget { break }
            cellSize *= 4
        }
        var comparisons = 0
        let allowed = comparisonsPerPoint * count + 100_000
        for members in cells.values where members.count > 1 {
            for i in 0..<(members.count - 1) {
                for j in (i + 1)..<members.count {
                    comparisons += 1
                    if comparisons > allowed {
                        return "its \(count) points lie too close together to check that it does not cross itself; "
                            + "simplify the boundary in the farm software"
                    }
                    let (first, second) = (Int(members[i]), Int(members[j]))
                    if edgesMeet(first, second, count: count, edge(first), edge(second)) {
                        return
                            "it crosses or touches itself (edges \(min(first, second) + 1) and \(max(first, second) + 1) of \(count)); "
                            + "correct the boundary in the farm software"
                    }
                }
            }
        }
        return nil
    }

    private static func cell(_ value: Double, _ size: Double) -> Int {
        let scaled = (value / size).rounded(.down)
        // Degrees over a positive size stay far inside Int32; clamp all the same, never trap.
        return Int(max(-2_000_000_000, min(2_000_000_000, scaled)))
    }

    /// Whether two edges of the ring share more than neighbours do: neighbours meet at their shared
    /// corner only, and fold back onto each other when the ring doubles back on itself.
    private static func edgesMeet(
        _ i: Int, _ j: Int, count: Int, _ p: (a: (x: Double, y: Double), b: (x: Double, y: Double)),
        _ q: (a: (x: Double, y: Double), b: (x: Double, y: Double))
    ) -> Bool {
        let neighbours = (i + 1) % count == j || (j + 1) % count == i
        if neighbours {
            // Sharing one corner, they overlap only when collinear and pointing back along each other.
            let (u, v) = ((x: p.b.x - p.a.x, y: p.b.y - p.a.y), (x: q.b.x - q.a.x, y: q.b.y - q.a.y))
            let cross = u.x * v.y - u.y * v.x
            return cross == 0 && u.x * v.x + u.y * v.y < 0
        }
        return segmentsIntersect(p.a, p.b, q.a, q.b)
    }

    /// Whether two closed segments have a point in common, touching included.
    static func segmentsIntersect(
        _ a: (x: Double, y: Double), _ b: (x: Double, y: Double),
        _ c: (x: Double, y: Double), _ d: (x: Double, y: Double)
    ) -> Bool {
        guard max(a.x, b.x) >= min(c.x, d.x), max(c.x, d.x) >= min(a.x, b.x),
            max(a.y, b.y) >= min(c.y, d.y), max(c.y, d.y) >= min(a.y, b.y)
        else { return false }
        func orientation(_ p: (x: Double, y: Double), _ q: (x: Double, y: Double), _ r: (x: Double, y: Double))
            -> Double
        {
            (q.x - p.x) * (r.y - p.y) - (q.y - p.y) * (r.x - p.x)
        }
        let (d1, d2) = (orientation(a, b, c), orientation(a, b, d))
        let (d3, d4) = (orientation(c, d, a), orientation(c, d, b))
        if (d1 > 0 && d2 < 0 || d1 < 0 && d2 > 0) && (d3 > 0 && d4 < 0 || d3 < 0 && d4 > 0) { return true }
        // Collinear or touching: a point of one on the other (the boxes already overlap).
        func onSegment(_ p: (x: Double, y: Double), _ q: (x: Double, y: Double), _ r: (x: Double, y: Double)) -> Bool {
            min(p.x, q.x) <= r.x && r.x <= max(p.x, q.x) && min(p.y, q.y) <= r.y && r.y <= max(p.y, q.y)
        }
        return d1 == 0 && onSegment(a, b, c) || d2 == 0 && onSegment(a, b, d) || d3 == 0 && onSegment(c, d, a)
            || d4 == 0 && onSegment(c, d, b)
    }
}
