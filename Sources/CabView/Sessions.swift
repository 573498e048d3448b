import Foundation

/// Logged-in browsers. A session is a random id in an HttpOnly, SameSite=Strict cookie, and carries a
/// CSRF token that every state-changing request must send back in a header: a page of another site can
/// neither read the token nor set the header. Sessions expire.
///
/// The table is bounded, and a full table must not cost the driver the session in use: each client
/// address keeps at most `perClient` sessions, and what goes first, for a client or for the table, is
/// a session never used since it was opened, then the one used longest ago. A client opening hundreds
/// of sessions pushes out only its own unused ones.
actor Sessions {
    struct Session: Sendable {
        var csrfToken: String
        var expiresAt: Date
        var client = ""
        var openedAt = Date()
        var lastUsed: Date?
    }

    private var sessions: [String: Session] = [:]
    private let lifetime: Double
    let capacity: Int
    let perClient: Int

    init(lifetime: Double, capacity: Int = 256, perClient: Int = 32) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
        self.perClient = max(1, min(perClient, capacity))
    }

    /// A new session for `client`: its id (for the cookie) and its CSRF token. nil if no randomness could be had.
    func open(client: String = "", now: Date = Date()) -> (id: String, session: Session)? {
        guard let id = Self.token(), let csrf = Self.token() else { return nil }
        sessions = sessions.filter { $0.value.expiresAt > now }
        let own = sessions.filter { $0.value.client == client }
        if own.count >= perClient, let victim = Self.first(toGo: own) {
            sessions[victim] = nil
        } else if sessions.count >= capacity {
            // From the client with the most sessions, so that no one client empties another's.
            let counts = Dictionary(grouping: sessions.values, by: \.client).mapValues(\.count)
            let busiest = counts.max { $0.value < $1.value }?.key
            if let victim = Self.first(toGo: sessions.filter { $0.value.client == busiest }) { sessions[victim] = nil }
        }
        let session = Session(
            csrfToken: csrf, expiresAt: now.addingTimeInterval(lifetime), client: client, openedAt: now)
        sessions[id] = session
        return (id, session)
    }

    /// Unused sessions first, oldest first; then the one used longest ago.
    private static func first(toGo candidates: [String: Session]) -> String? {
        candidates.min { left, right in
            switch (left.value.lastUsed, right.value.lastUsed) {
            case (nil, nil): return left.value.openedAt < right.value.openedAt
            case (nil, _): return true
            case (_, nil): return false
            case let (a?, b?): return a < b
            }
        }?.key
    }

    /// The live session with this id, if there is one; marks it used.
    func session(_ id: String?, now: Date = Date()) -> Session? {
        guard let id, var session = sessions[id] else { return nil }
        guard session.expiresAt > now else {
            sessions[id] = nil
            return nil
        }
        session.lastUsed = now
        sessions[id] = session
        return session
    }

    func close(_ id: String?) {
        if let id { sessions[id] = nil }
    }

    var lifetimeSeconds: Double { lifetime }

    /// 32 random bytes as hex.
    static func token() -> String? {
        PasswordFile.randomBytes(32).map(PasswordFile.hex)
    }
}
