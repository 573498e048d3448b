import Foundation
import GNSS
import Spool
import StateDirectory
import Testing

@testable import StateView

@Suite("Status verdict")
struct StatusVerdictTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// A healthy gateway: running, onboarded, a fix 1 s old, nothing waiting.
    func healthy() -> StatusSnapshot {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
        var fix = Heartbeat.Sample(
            PositionSample(
                sampledAt: now.addingTimeInterval(-1), state: .fix(.threeD, .rtkFixed),
                report: PositionReport(time: now, gpsdMode: 3, gpsdStatus: 3, latitude: 52, longitude: 8)))
        fix.sampledAt = now.addingTimeInterval(-1)
        heartbeat.lastFix = fix
        heartbeat.lastSample = fix
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: .running(pid: 42, heartbeatAge: 2), heartbeat: heartbeat, environment: "production",
            spool: SpoolStatus(), others: OthersView())
        snapshot.stateDirectory = "/var/lib/agrigps"
        return snapshot
    }

    func verdict(_ change: (inout StatusSnapshot) -> Void, _ thresholds: StatusThresholds = StatusThresholds()) -> (
        Health, [String]
    ) {
        var snapshot = healthy()
        change(&snapshot)
        let result = snapshot.verdict(thresholds)
        return (result.health, result.reasons)
    }

    @Test("OK when all is well; paused sharing is a choice, not a fault")
    func ok() {
        #expect(verdict { _ in }.0 == .ok)
        #expect(verdict { $0.spool?.sharingPaused = true }.0 == .ok)
    }

    @Test("a full disk is CRITICAL and explains a stale heartbeat; a low one is a WARNING")
    func disk() {
        #expect(verdict { $0.diskFree = 200 << 20 }.0 == .ok)
        let low = verdict { $0.diskFree = 10 << 20 }
        #expect(low.0 == .warning && low.1 == ["only 10 MiB free on the disk holding /var/lib/agrigps"])
        let full = verdict {
            $0.diskFree = 4096
            $0.daemon = .stalled(pid: 42, heartbeatAge: 300)
        }
        #expect(full.0 == .critical)
        #expect(full.1.first == "no heartbeat for 300 s: the daemon cannot write it to a full disk")
        #expect(full.1.contains { $0.hasPrefix("the disk holding /var/lib/agrigps is full (4 KiB free)") })
    }

    @Test(
        "after the clock steps from 1970 to now, time without an acknowledgement is the daemon's monotonic count, not since a 1970 start"
    )
    func clockStepQuiet() {
        func stepped(quiet: Double) -> (Health, [String]) {
            verdict {
                $0.spool?.pending = 5
                $0.heartbeat?.startedAt = Date(timeIntervalSince1970: 5)
                $0.heartbeat?.updatedAt = now.addingTimeInterval(-2)
                $0.heartbeat?.quietSeconds = quiet
            }
        }
        #expect(stepped(quiet: 40).0 == .ok, "\(stepped(quiet: 40).1)")
        #expect(stepped(quiet: 400) == (.warning, ["nothing acknowledged for 402 s"]))
    }

    @Test(
        "a failing link is a WARNING at the first failed request, with why and when the next goes; none once it works")
    func failingLink() {
        #expect(
            verdict {
                $0.heartbeat?.transportFailures = 1
                $0.heartbeat?.lastError = "the connection to agrirouter failed: Couldn't connect to server"
                $0.heartbeat?.nextAttemptAt = now.addingTimeInterval(5)
            } == (
                .warning,
                [
                    "agrirouter unreachable: the connection to agrirouter failed: Couldn't connect to server (1 failed request in a row); next attempt in 5 s"
                ]
            ))
        #expect(
            verdict { $0.heartbeat?.lastError = "an old failure" }.0 == .ok,
            "a past failure with the link working again is not news")
        #expect(
            verdict {
                $0.heartbeat?.transportFailures = 3
                $0.environment = nil
            }.1 == ["not onboarded"])
    }

    @Test(
        "an outage: samples waiting and nothing acknowledged past the threshold is a WARNING that names the next attempt"
    )
    func outage() {
        #expect(
            verdict {
                $0.spool?.pending = 5
                $0.heartbeat?.lastAcknowledgedAt = now.addingTimeInterval(-301)
                $0.heartbeat?.nextAttemptAt = now.addingTimeInterval(40)
            } == (.warning, ["nothing acknowledged for 301 s; next attempt in 40 s"]))
        #expect(
            verdict {
                $0.spool?.pending = 5
                $0.heartbeat?.lastAcknowledgedAt = now.addingTimeInterval(-299)
            }.0 == .ok)
        #expect(
            verdict { $0.heartbeat?.lastAcknowledgedAt = now.addingTimeInterval(-9999) }.0 == .ok,
            "nothing waits: nothing to acknowledge")
        #expect(
            verdict { $0.spool?.inFlight = 1 } == (.warning, ["nothing acknowledged for 3600 s"]),
            "none since the start an hour ago")
        #expect(
            verdict {
                $0.spool?.pending = 1
                $0.environment = nil
            } == (.warning, ["not onboarded"]))
        var patient = StatusThresholds()
        patient.ackAgeWarning = 7200
        #expect(verdict({ $0.spool?.pending = 1 }, patient).0 == .ok)
    }

    @Test(
        "positions late by the cab label's rule are a WARNING before any request fails, so status and the label agree")
    func late() {
        func late(oldest: Double, quiet: Double, failures: Int? = nil) -> (Health, [String]) {
            verdict {
                $0.spool?.pending = 4
                $0.spool?.oldestPendingAge = oldest
                $0.heartbeat?.updatedAt = now
                $0.heartbeat?.quietSeconds = quiet
                $0.heartbeat?.sendInterval = 10
                $0.heartbeat?.transportFailures = failures
            }
        }
        let said = late(oldest: 45, quiet: 41)
        #expect(
            said == (
                .warning,
                [
                    "positions late: the oldest waited 45 s, nothing acknowledged for 41 s; agrirouter or the network does not answer"
                ]
            ))
        var snapshot = healthy()
        snapshot.spool?.pending = 4
        snapshot.spool?.oldestPendingAge = 45
        snapshot.heartbeat?.updatedAt = now
        snapshot.heartbeat?.quietSeconds = 41
        #expect(
            SharingIndicator(snapshot, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds()).state
                == .offline)
        #expect(late(oldest: 29, quiet: 41).0 == .ok, "not yet three cycles old")
        #expect(late(oldest: 500, quiet: 5).0 == .ok, "a backlog draining")
        #expect(late(oldest: 400, quiet: 400).1 == ["nothing acknowledged for 400 s"], "said once, by the older rule")
        #expect(late(oldest: 45, quiet: 41, failures: 2).1.count == 1, "a failing request says it with its reason")
    }

    @Test("samples lost at a shutdown are CRITICAL, with the reason, until a new heartbeat without them")
    func loss() {
        #expect(
            verdict {
                $0.heartbeat?.lostSamples = 94
                $0.heartbeat?.lossReason = "spool: database or disk is full"
            }
                == (.critical, ["94 samples lost: spool: database or disk is full"]))
        #expect(verdict { $0.heartbeat?.lostSamples = 0 }.0 == .ok)
        #expect(
            verdict {
                $0.heartbeat?.lostSamples = 94
                $0.heartbeat?.lostAt = now.addingTimeInterval(-86_401)
            }.0 == .ok, "reported for a day")
    }

    @Test("the certificate: a WARNING 30 days before it expires, CRITICAL after")
    func certificate() {
        #expect(
            verdict { $0.certificateNotAfter = now.addingTimeInterval(10 * 86_400) }
                == (.warning, ["the endpoint certificate expires in 10 d; onboard again before then"]))
        #expect(
            verdict { $0.certificateNotAfter = now.addingTimeInterval(-1) }
                == (.critical, ["the endpoint certificate expired on 2026-09-21; onboard again"]))
        #expect(verdict { $0.certificateNotAfter = now.addingTimeInterval(31 * 86_400) }.0 == .ok)
        #expect(
            verdict {
                $0.certificateNotAfter = now.addingTimeInterval(-1)
                $0.environment = nil
            }.0 == .warning, "not onboarded: no certificate to judge")
    }

    @Test("each WARNING with the threshold that triggers it")
    func warnings() {
        #expect(verdict { $0.environment = nil } == (.warning, ["not onboarded"]))
        #expect(verdict { $0.heartbeat?.lastFix = nil } == (.warning, ["no fix yet"]))
        #expect(
            verdict { $0.heartbeat?.lastFix?.sampledAt = now.addingTimeInterval(-61) } == (
                .warning, ["no fix for 61 s"]
            ))
        #expect(verdict { $0.heartbeat?.lastFix?.sampledAt = now.addingTimeInterval(-59) }.0 == .ok)
        var strict = StatusThresholds()
        strict.fixAgeWarning = 0.5
        #expect(verdict({ _ in }, strict) == (.warning, ["no fix for 1 s"]))
        #expect(verdict { $0.spool?.oldestPendingAge = 601 } == (.warning, ["oldest unsent sample waited 601 s"]))
        #expect(verdict { $0.spool?.parked = 3 } == (.warning, ["3 samples parked after repeated refusals"]))
        #expect(verdict { $0.spool?.dropped = ["age": 2] } == (.warning, ["2 samples dropped by the spool's caps"]))
        #expect(
            verdict { $0.spool?.heldInMemory = 10 } == (.warning, ["10 samples held in memory only"]),
            "nothing lost yet")
        #expect(
            verdict {
                $0.spool?.quarantinedFile = "/var/lib/agrigps/spool.sqlite.corrupt-20261123T120000Z"
                $0.spool?.quarantinedAt = now
            }
                == (
                    .warning,
                    [
                        "a damaged spool was moved aside as /var/lib/agrigps/spool.sqlite.corrupt-20261123T120000Z; what it held was not sent"
                    ]
                ))
        #expect(
            verdict {
                $0.spool?.quarantinedFile = "x"
                $0.spool?.quarantinedAt = now.addingTimeInterval(-86_401)
            }.0 == .ok)
        #expect(verdict { $0.heartbeat?.lastSample?.clockSkew = 3600 } == (.warning, ["system clock off by 3600 s"]))
    }

    @Test("each CRITICAL with the threshold that triggers it, ahead of any warning")
    func criticals() {
        #expect(verdict { $0.daemon = .notRunning(lastHeartbeat: nil) } == (.critical, ["daemon not running"]))
        #expect(
            verdict { $0.daemon = .stalled(pid: 42, heartbeatAge: 121) } == (
                .critical, ["daemon stalled: no heartbeat for 121 s"]
            ))
        #expect(
            verdict { $0.heartbeat?.lastFix?.sampledAt = now.addingTimeInterval(-601) } == (
                .critical, ["no fix for 601 s"]
            ))
        #expect(verdict { $0.spool?.oldestPendingAge = 3601 } == (.critical, ["oldest unsent sample waited 3601 s"]))
        #expect(
            verdict { $0.spool?.dropped = ["memory": 4] }
                == (.critical, ["4 samples lost: the memory ring overflowed while the spool could not store"]))
        let both = verdict {
            $0.environment = nil
            $0.daemon = .notRunning(lastHeartbeat: nil)
        }
        #expect(both == (.critical, ["daemon not running", "not onboarded"]))
    }

    @Test("UNKNOWN when the state directory cannot be read")
    func unknown() {
        // Its heartbeat unread, the daemon looks gone: that must not be reported as CRITICAL.
        #expect(
            verdict {
                $0.daemon = .notRunning(lastHeartbeat: nil)
                $0.unreadable = "cannot read the state directory /var/lib/agrigps"
            } == (.unknown, ["cannot read the state directory /var/lib/agrigps"]))
    }

    @Test("the daemon's state comes from its heartbeat and its process")
    func daemonState() {
        var heartbeat = Heartbeat(pid: getpid(), startedAt: now, onboarded: true)
        heartbeat.updatedAt = now.addingTimeInterval(-5)
        #expect(StatusSnapshot.daemonState(heartbeat, now: now, limit: 120) == .running(pid: getpid(), heartbeatAge: 5))
        #expect(
            StatusSnapshot.daemonState(heartbeat, now: now.addingTimeInterval(200), limit: 120)
                == .stalled(pid: getpid(), heartbeatAge: 205))
        heartbeat.pid = Int32.max
        #expect(
            StatusSnapshot.daemonState(heartbeat, now: now, limit: 120)
                == .notRunning(lastHeartbeat: now.addingTimeInterval(-5)))
        #expect(StatusSnapshot.daemonState(nil, now: now, limit: 120) == .notRunning(lastHeartbeat: nil))
    }
}
