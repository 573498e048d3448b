import Foundation
import JSONText
import StateFiles

/// What a machine keeps after onboarding: the endpoint, its credential, and where it belongs.
public struct StoredEndpoint: Sendable {
    public var environment: String
    public var response: OnboardingResponse
    /// The ids the capabilities message needs; kept from onboarding.
    public var settings: OnboardingSettings?
    /// The CA a local agrirouter signs with; nil for QA and production, which use the system's CAs.
    public var trustedCAPEM: String?

    public var credentials: ClientCredentials? {
        ClientCredentials(agrirouterPEM: response.authentication.certificate, secret: response.authentication.secret)
    }
}

/// The state directory's agrirouter files, all 0600 in a 0700 directory:
/// - `endpoint-id`: the persistent onboarding id (a URN), made once and kept through disconnects;
/// - `endpoint-transport`: rest or mqtt, as first onboarded, kept the same way;
/// - `endpoint.json`: the onboarding response without its secret; the key in it stays encrypted;
/// - `endpoint.secret`: the secret that opens the key, beside it.
public struct CredentialStore: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    var idPath: String { directory + "/endpoint-id" }
    var endpointPath: String { directory + "/endpoint.json" }
    var secretPath: String { directory + "/endpoint.secret" }
    /// A new secret on its way to `endpoint.secret`, while a save is under way.
    var nextSecretPath: String { directory + "/endpoint.secret-next" }

    /// The files whose change `fingerprint()` sees: what a watcher of the directory watches.
    public var files: [String] { [endpointPath, secretPath] }

    /// Changes whenever the credentials are stored anew or removed (inode, size and modification time
    /// of both files): a running daemon compares it to pick up a new onboarding or a disconnect.
    public func fingerprint() -> [FileStamp] {
        files.map(FileStamp.of)
    }

    /// The id this machine onboards with, created on first use and never changed.
    public func externalID() throws(OnboardingError) -> String {
        // Made anew only when there is none: an id that cannot be read (a link, a FIFO, no
        // permission) is an error, or the next onboarding would make a second endpoint.
        let stored: [UInt8]?
        do {
            stored = try StateFile.read(idPath, limit: 4096)
        } catch {
            throw .storage("\(error.description); the endpoint id must stay the same, so nothing was onboarded")
        }
        if let stored {
            let existing = String(decoding: stored, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !existing.isEmpty, String(validating: stored, as: UTF8.self) != nil else {
                throw .storage(
                    "\(idPath) is damaged; restore it from a backup, or remove it to onboard as a new endpoint")
            }
            return existing
        }
        let id = "urn:agrigps:endpoint:\(UUID().uuidString.lowercased())"
        try write(Data((id + "\n").utf8), to: idPath)
        return id
    }

    var transportPath: String { directory + "/endpoint-transport" }

    /// The transport the endpoint was first onboarded with: agrirouter keeps it with the endpoint, so
    /// it is kept through disconnects like the endpoint id. Nil before the first onboarding.
    public func recordedTransport() -> Transport? {
        Self.text(transportPath)
            .flatMap { Transport(rawValue: $0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    public func record(_ transport: Transport) throws(OnboardingError) {
        guard recordedTransport() != transport else { return }
        try write(Data((transport.rawValue + "\n").utf8), to: transportPath)
    }

    public func load() throws(OnboardingError) -> StoredEndpoint? {
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.read(endpointPath, limit: 1 << 20)
        } catch {
            throw .storage("\(error.description); then onboard again")
        }
        guard let bytes else { return nil }
        do {
            let file = try JSONDecoder().decode(StoredFile.self, from: Data(bytes))
            guard let secret = secret(for: file.response) else { throw OnboardingError.storage("no secret") }
            var response = file.response
            response.authentication.secret = secret
            let settings = file.applicationID.map {
                OnboardingSettings(applicationID: $0, certificationVersionID: file.certificationVersionID ?? "")
            }
            return StoredEndpoint(
                environment: file.environment, response: response, settings: settings, trustedCAPEM: file.trustedCAPEM)
        } catch {
            throw .storage("\(endpointPath) or \(secretPath) cannot be read; onboard again")
        }
    }

    /// The secret beside `response`: `endpoint.secret`, unless a save was cut short after its new
    /// `endpoint.json` and before the new secret took the old one's name; then the next secret, which
    /// is the one that opens this key. Decrypting is tried only in that rare case.
    private func secret(for response: OnboardingResponse) -> String? {
        let current = Self.text(secretPath).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard let next = Self.text(nextSecretPath).map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }),
            next != current
        else {
            return current
        }
        let opens =
            ClientCredentials(agrirouterPEM: response.authentication.certificate, secret: next).map {
                (try? $0.check()) != nil
            } ?? false
        return opens ? next : current
    }

    /// Stores a new credential so that a power cut at any moment leaves the old one or the new one,
    /// whole: the TAN is spent by now, and half of a credential is worth nothing.
    public func save(
        _ response: OnboardingResponse, environment: String, settings: OnboardingSettings? = nil,
        trustedCAPEM: String? = nil
    ) throws(OnboardingError) {
        let pending = try prepare(response, environment: environment, settings: settings, trustedCAPEM: trustedCAPEM)
        for step in SaveStep.allCases { try perform(step, of: pending) }
    }

    /// The save, one durable step at a time (file and directory synced before the next): the new
    /// secret under a name of its own, then `endpoint.json` (the commit: from here on its key is the
    /// one `load` opens), then the secret under its own name.
    enum SaveStep: CaseIterable {
        case nextSecret, endpoint, secret
    }

    /// What a save writes: the secret's file and `endpoint.json`.
    struct PendingSave {
        var secret: Data
        var endpoint: Data
    }

    func prepare(
        _ response: OnboardingResponse, environment: String, settings: OnboardingSettings?,
        trustedCAPEM: String?
    ) throws(OnboardingError) -> PendingSave {
        var withoutSecret = response
        withoutSecret.authentication.secret = ""
        let encoder = JSONWriter.encoder(pretty: true)
        let file = StoredFile(
            environment: environment, response: withoutSecret, applicationID: settings?.applicationID,
            certificationVersionID: settings?.certificationVersionID, trustedCAPEM: trustedCAPEM)
        guard let data = try? encoder.encode(file) else {
            throw .storage("the onboarding response could not be encoded")
        }
        return PendingSave(secret: Data((response.authentication.secret + "\n").utf8), endpoint: data)
    }

    func perform(_ step: SaveStep, of pending: PendingSave) throws(OnboardingError) {
        switch step {
        case .nextSecret: try write(pending.secret, to: nextSecretPath)
        case .endpoint: try write(pending.endpoint, to: endpointPath)
        case .secret: try rename(nextSecretPath, to: secretPath)
        }
    }

    private struct StoredFile: Codable {
        var environment: String
        var response: OnboardingResponse
        var applicationID: String?
        var certificationVersionID: String?
        var trustedCAPEM: String?
    }

    /// Removes the credential; the endpoint id stays, so a later onboarding is the same endpoint.
    public func delete() throws(OnboardingError) {
        for path in [endpointPath, secretPath, nextSecretPath] where FileManager.default.fileExists(atPath: path) {
            guard unlink(path) == 0 else { throw .storage("\(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// Writes through a 0600 temporary file, a rename and a sync of the directory, so no reader ever
    /// sees a partial or readable file and a power cut after it keeps the file.
    func write(_ data: Data, to path: String) throws(OnboardingError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw .storage("cannot create \(directory): \(error.localizedDescription)")
        }
        do {
            try StateFile.replace(path, with: Array(data))
        } catch {
            throw .storage(error.description)
        }
    }

    /// Renames within the state directory and syncs the directory, so that the new name survives a
    /// power cut.
    func rename(_ from: String, to path: String) throws(OnboardingError) {
        guard Glibc.rename(from, path) == 0 else { throw .storage("\(path): \(String(cString: strerror(errno)))") }
        do {
            try StateFile.syncDirectory(directory)
        } catch {
            throw .storage(error.description)
        }
    }

    /// A small text file of ours as UTF-8, or nil if it is missing, unreadable or not a regular file.
    static func text(_ path: String) -> String? {
        (try? StateFile.read(path, limit: 1 << 20)).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
