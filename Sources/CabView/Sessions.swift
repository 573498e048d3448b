import Foundation

/// Logged-in browsers. A session is a random id in an HttpOnly, SameSite=Strict cookie, and carries a
/// CSRF token that every state-changing request must send back in a header: a page of another site can
/// neither read the token nor set the header. Sessions expire; a full table forgets the oldest.
actor Sessions {
    struct Session: Sendable {
        var csrfToken: String
        var expiresAt: Date
    }

    private var sessions: [String: Session] = [:]
    private let lifetime: Double
    private let capacity = 256

    init(lifetime: Double) {
        self.lifetime = lifetime
    }

    /// A new session: its id (for the cookie) and its CSRF token. nil if no randomness could be had.
    func open(now: Date = Date()) -> (id: String, session: Session)? {
        guard let id = Self.token(), let csrf = Self.token() else { return nil }
        sessions = sessions.filter { $0.value.expiresAt > now }
        if sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt }) {
            sessions[oldest.key] = nil
        }
        let session = Session(csrfToken: csrf, expiresAt: now.addingTimeInterval(lifetime))
        sessions[id] = session
        return (id, session)
    }

    /// The live session with this id, if there is one.
    func session(_ id: String?, now: Date = Date()) -> Session? {
        guard let id, let session = sessions[id] else { return nil }
        guard session.expiresAt > now else {
            sessions[id] = nil
            return nil
        }
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
