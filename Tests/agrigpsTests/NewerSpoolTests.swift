import Foundation
import GRDB
import Spool
import TestSupport
import Testing

/// A package installed over a newer one finds a spool whose schema it does not know.
@Suite(.timeLimit(.minutes(2)))
struct NewerSpoolTests {
    @Test("a spool written by a newer agrigps is refused with words, left as it is, and agrigps run exits 78")
    func newerSpoolIsRefused() async throws {
        let scratch = TemporaryDirectory("newer")
        let state = scratch.path
        let path = state + "/spool.sqlite"
        // A spool as this version makes it, then a step only a later version knows.
        do {
            let spool = Spool(path: path)
            #expect(await spool.refusal == nil)
            _ = await spool.status()
        }
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-a-later-version')")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        let refusal = try #require(await Spool(path: path).refusal)
        #expect(refusal.kind == .newerVersion)
        #expect(
            refusal.description.contains(
                "written by a newer agrigps (schema steps v99-from-a-later-version are unknown"), "\(refusal)")
        #expect(refusal.description.contains("install that version again"), "\(refusal)")

        let run = try await AgrigpsCommand.run(["run", "--state-dir", state], timeout: 30)
        #expect(run.code == 78, "\(run.stderr)")
        #expect(run.stderr.joined(separator: " ").contains("written by a newer agrigps"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the newer spool is left as it was")
        let aside = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains("corrupt") }
        #expect(aside.isEmpty, "nothing moved aside: \(aside)")
    }
}
