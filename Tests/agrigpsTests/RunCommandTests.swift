import AgrirouterSim
import AgrirouterWire
import Foundation
import GPSDReplay
import Spool
import StateDirectory
import TestSupport
import Testing

extension OnboardedMachine {
    func spoolStatus() async -> SpoolStatus { await Spool(path: state + "/spool.sqlite").status() }

    /// Replays ublox-lea-4h with the first gps:info taken and its answers held for `seconds`, and
    /// kills the daemon with SIGKILL while it waits for them.
    func killWhileTheFirstAnswerIsHeld(seconds: Double) async throws {
        await simulator.inject(.stallPublish(seconds: seconds))
        let first = try AgrigpsCommand([
            "run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state, "--spacing", "0.05",
        ])
        defer { first.cleanUp() }
        var published = false
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !published {
            published = await simulator.sentMessages(endpoint: try endpointID).contains {
                $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo
            }
            if !published { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(published, "the daemon never published")
        #expect(await spoolStatus().inFlight > 0)
        // libmosquitto is opened by the MQTT transport only.
        #expect(
            first.hasMapped("libmosquitto.so") == (transport == "mqtt"),
            "\(transport): \(mappedFiles(named: "mosquitto", of: first.process.pid))")
        kill(first.process.pid, SIGKILL)
        #expect(await first.process.wait(timeout: 10) == 128 + SIGKILL)
    }

    /// Replays bu353-glonass to its end, then checks that every sample of both runs arrived exactly
    /// once in each format: the held batch's answer was found, not sent again.
    func secondRunDeliversBothRunsOnce() async throws {
        let second = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log("bu353-glonass"), "--state-dir", state, "--spacing", "0.05"], timeout: 120)
        #expect(second.code == 0, "\(second.stderr.suffix(5))")
        let expected = try expectedEntries("ublox-lea-4h") + expectedEntries("bu353-glonass")
        #expect(try await received().map(\.positionNorth) == expected.map(\.latitude))
        #expect(
            try await receivedTimes().map(\.positionStart.positionNorth) == expected.map(\.latitude),
            "and once as TimeLog Times")
        let status = await spoolStatus()
        #expect(status.pending + status.inFlight + status.failed == 0 && status.resent == 0)
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct RunCommandTests {
    @Test(
        "a recorded log reaches agrirouter once, in order, with its statuses, over REST and over MQTT",
        arguments: ["ublox-lea-4h", "nmea-rtk"], ["rest", "mqtt"])
    func endToEnd(log: String, transport: String) async throws {
        let machine = try await OnboardedMachine.make(transport: transport)
        try await tearingDown({ await machine.close() }) {
            let run = try await AgrigpsCommand.run(
                ["run", "--replay", Fixtures.log(log), "--state-dir", machine.state, "--spacing", "0.05"], timeout: 120)
            #expect(run.code == 0, "\(run.stderr.suffix(5))")
            let expected = try expectedEntries(log)
            let received = try await machine.received()
            #expect(received.map(\.positionStatus) == expected.map(\.status))
            #expect(received.map(\.positionNorth) == expected.map(\.latitude))
            // The same samples once more as TimeLog Times, after the device description, with the same statuses.
            let times = try await machine.receivedTimes()
            #expect(times.map { $0.positionStart.positionStatus.rawValue } == expected.map(\.status.rawValue))
            #expect(times.map(\.positionStart.positionNorth) == expected.map(\.latitude))
            // A sample with the receiver's time starts at exactly its GPS entry's time. One without (no
            // fix, or nmea-rtk's first fix, which comes without a time) carries the system time corrected
            // to the best known UTC when it is sent, and EFDI may go a cycle later than gps:info, after
            // that estimate has moved: seconds apart at most.
            let timed = try Fixtures.lines(
                of: Fixtures.nmeaDirectory.appendingPathComponent("\(log).samples.jsonl").path
            ).map { line in
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["time"] is String
            }
            #expect(times.count == received.count && timed.count == received.count)
            for ((time, entry), hasReceiverTime) in zip(zip(times, received), timed) {
                if hasReceiverTime {
                    #expect(time.start == entry.gpsUtcTimestamp, "a timed sample's Time starts at its GPS entry's time")
                } else {
                    #expect(
                        abs(time.start.date.timeIntervalSince(entry.gpsUtcTimestamp.date)) < 5,
                        "\(time.start) \(entry.gpsUtcTimestamp)")
                }
            }
            let types = try await machine.simulator.sentMessages(endpoint: machine.endpointID).map(
                \.envelope.technicalMessageType)
            #expect(
                types.firstIndex(of: TechnicalMessageType.deviceDescription).map {
                    $0 < types.firstIndex(of: TechnicalMessageType.timeLog) ?? 0
                } == true,
                "the device description goes before the first TimeLog: \(types)")
            if log == "ublox-lea-4h" {
                #expect(
                    received.filter { $0.positionStatus == .dNoGps }.count == 2, "the fix losses are sent as D_NO_GPS")
                #expect(times.filter { $0.positionStart.positionStatus == .dNoGps }.count == 2, "and as D_NO_GPS Times")
            }
            let status = await machine.spoolStatus()
            #expect(
                status.pending + status.inFlight + status.failed + status.parked == 0, "the spool is empty at the end")
            // The machine's own records say the same: every sample of the log's days sent and acknowledged, none lost.
            let stats = try await AgrigpsCommand.run([
                "stats", "--json", "--by", "year", "--since", "2019-01-01", "--until", "2026-06-01",
                "--state-dir", machine.state,
            ])
            let periods =
                (try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])?["periods"]
                as? [[String: Any]] ?? []
            func total(_ key: String) -> Int { periods.compactMap { $0[key] as? Int }.reduce(0, +) }
            #expect(
                total("samples") == timed.filter { $0 }.count && total("samples") > 0, "\(stats.stdout) \(stats.stderr)"
            )
            #expect(
                total("samples_sent") == total("samples") && total("samples_acknowledged") == total("samples")
                    && total("samples_lost") == 0,
                "\(stats.stdout)")
            #expect(run.stdout.last?.contains("0 waiting in the spool") == true)
            // Status names the transport and what its connection was doing.
            let shown = try await AgrigpsCommand.run(["status", "--state-dir", machine.state])
            let line = shown.stdout.first { $0.hasPrefix("agrirouter: onboarded (local)") } ?? ""
            #expect(line.hasSuffix(transport == "mqtt" ? "; MQTT, connected" : "; REST, requests"), "\(shown.stdout)")
        }
    }

    @Test func killedMidSendThenRestartedLosesNothing() async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            // The first gps:info POST is handled, then hangs; the daemon is killed while it waits for the answer.
            try await machine.killWhileTheFirstAnswerIsHeld(seconds: 30)
            await machine.simulator.clearFaults()
            try await machine.secondRunDeliversBothRunsOnce()
            // The restart remembered the first run's set-up: capabilities and subscription went once.
            let sent = try await machine.simulator.sentMessages(endpoint: machine.endpointID).map(
                \.envelope.technicalMessageType)
            #expect(
                sent.count { $0 == TechnicalMessageType.capabilities } == 1
                    && sent.count { $0 == TechnicalMessageType.subscription } == 1,
                "\(sent.filter { $0 != TechnicalMessageType.gpsInfo })")
        }
    }

    @Test("over MQTT: killed while its answers are held, the broker restarted, then a second run: every sample once")
    func mqttKilledAndBrokerRestartedLosesNothing() async throws {
        let machine = try await OnboardedMachine.make(transport: "mqtt")
        try await tearingDown({ await machine.close() }) {
            // The first gps:info is taken and its answers held for 6 s; the daemon is killed while it waits.
            try await machine.killWhileTheFirstAnswerIsHeld(seconds: 6)
            // Every connection drops, and the broker comes back a second later having forgotten every
            // session. The held answers go out when they are let go, to the second run.
            try await machine.simulator.restartBroker(after: 1)
            try await machine.secondRunDeliversBothRunsOnce()
        }
    }

    @Test func pauseAndResumeReachARunningDaemon() async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            var options = ReplayGPSD.Options()
            options.realTime = true
            let gpsd = try await ReplayGPSD.start(
                log: try NMEALog(contentsOf: Fixtures.log("telit-he910")), options: options)
            defer { gpsd.stop() }
            let daemon = try AgrigpsCommand([
                "run", "--gpsd", "127.0.0.1:\(gpsd.address.port)", "--state-dir", machine.state,
                "--send-interval", "0.2", "--spacing", "0.05",
            ])
            defer {
                daemon.process.terminate(grace: 2)
                daemon.cleanUp()
            }
            func received() async -> Int { (try? await machine.received().count) ?? 0 }
            #expect(await eventually(within: 20) { await received() >= 3 }, "nothing was published")
            #expect(daemon.hasMapped("libcurl.so.4"), "publishing over REST opened libcurl")
            #expect(!daemon.hasMapped("libmosquitto"), "a daemon publishing over REST mapped libmosquitto")

            #expect(try await AgrigpsCommand.run(["pause", "--state-dir", machine.state]).code == 0)
            try await Task.sleep(for: .milliseconds(600))  // a batch already on its way may still land
            let atPause = await received()
            try await Task.sleep(for: .seconds(3))
            #expect(await received() == atPause, "samples were sent while paused")
            let paused = await machine.spoolStatus()
            #expect(paused.sharingPaused && paused.withheld >= 2)
            // status says since when, and what the pause holds back, as the cab view does.
            let status = try await AgrigpsCommand.run(["status", "--state-dir", machine.state])
            let line = status.stdout.first { $0.hasPrefix("Sharing: PAUSED") } ?? ""
            #expect(
                line.range(
                    of:
                        #"^Sharing: PAUSED since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z \([^)]*ago\), [1-9]\d* positions? kept here and never sent"#,
                    options: .regularExpression) != nil, "\(status.stdout)")

            #expect(try await AgrigpsCommand.run(["resume", "--state-dir", machine.state]).code == 0)
            #expect(await eventually(within: 10) { await received() > atPause }, "sending did not resume")
            let resumed = await machine.spoolStatus()
            // Samples taken between that status and the resume taking effect are withheld too, so
            // the count may have grown; none of those withheld may have been sent since.
            #expect(!resumed.sharingPaused && resumed.withheld >= paused.withheld, "withheld samples stay unsent")

            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 10) == 143, "SIGTERM stops the daemon cleanly, with 128 + 15")
        }
    }

    @Test(
        "SIGTERM while a GET of the outbox hangs: the daemon waits for its answers 13 s at most, within the unit's stop timeout, its samples kept"
    )
    func sigtermDuringStalledRequest() async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            await machine.simulator.inject(.stall(seconds: 30))
            let port = try ReplayGPSD.freeLoopbackPort()
            let daemon = try AgrigpsCommand([
                "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "0.2", "--state-dir", machine.state, "--spacing",
                "0.05",
            ])
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 1) }
                daemon.cleanUp()
            }
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, await machine.simulator.gatewayRequestArrivals().isEmpty {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(500))  // the request is in the simulator's hands, unanswered
            let stopping = Date()
            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 20) == 143)
            // The first request is the outbox GET that learns agrirouter's time: 3 s of grace, 10 more for its answers.
            let took = Date().timeIntervalSince(stopping)
            #expect(took > 3 && took < 15, "stopped after \(took) s")
            let status = await machine.spoolStatus()
            #expect(status.pending > 0 && status.storageFault == nil, "the samples wait for the next start")
        }
    }

    @Test(
        "[publishing] profile = \"live\" runs a send cycle every 5 s; --send-interval still wins",
        arguments: [nil, "20"])
    func liveProfile(sendInterval: String?) async throws {
        let scratch = TemporaryDirectory("live")
        let directory = scratch.path
        try "[publishing]\nprofile = \"live\"\n".write(
            toFile: directory + "/agrigps.conf", atomically: true, encoding: .utf8)
        let port = try ReplayGPSD.freeLoopbackPort()
        let daemon = try AgrigpsCommand(
            [
                "run", "--gpsd", "127.0.0.1:\(port)", "--config", directory + "/agrigps.conf", "--state-dir",
                directory + "/state",
            ]
                + (sendInterval.map { ["--send-interval", $0] } ?? []))
        defer {
            if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
            daemon.cleanUp()
        }
        try await waitForHeartbeat(in: directory + "/state") { $0.sendInterval != nil }
        #expect(
            Heartbeat.read(from: directory + "/state/heartbeat.json")?.sendInterval == (sendInterval == nil ? 5 : 20))
    }
}
