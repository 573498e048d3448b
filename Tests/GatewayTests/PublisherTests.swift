import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Clocks
import Foundation
import GNSS
import Spool
import TestSupport
import Testing

@testable import Gateway

/// A spool, an onboarded endpoint at a fresh simulator, and the publisher between them.
struct Rig {
    let simulator: AgrirouterSimulator
    let spool: Spool
    let connection: AgrirouterConnection
    let publisher: Publisher
    let scratch: TemporaryDirectory
    var directory: String { scratch.path }

    static func make(
        spacing: Double = 0.02, byteBudget: Int = AgrirouterLimits.payloadBytes,
        simulatorPayloadCap: Int = 767_997, timeout: Double = 10,
        backoff: Backoff = Backoff(first: 0.05, maximum: 0.2), clock: TrueTime? = nil,
        monotonic: MonotonicClock = .system, outputs: [SpoolOutput] = [.gpsInfo],
        spool configure: (inout SpoolConfiguration) -> Void = { _ in },
        efdi: ((inout Publisher.EFDI) -> Void)? = nil, responseCodes: SimResponseCodes = .documented
    ) async throws -> Rig {
        var simulatorConfiguration = SimConfiguration(tans: ["TAN0000001": "Tractor", "TAN0000002": "Watcher"])
        simulatorConfiguration.maximumPayloadBytes = simulatorPayloadCap
        simulatorConfiguration.responseCodes = responseCodes
        let simulator = try await AgrirouterSimulator.start(simulatorConfiguration)
        let endpoint = try await simulator.onboard(tan: "TAN0000001", externalID: "urn:agrigps:publisher")
        // Set up with the system clock, so that a test's clock may start out not knowing the time.
        // ... and with a patient timeout and a short spacing: only the connection under test gets the
        // test's.
        let setUp = try AgrirouterConnection(
            endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: min(spacing, 0.02),
            timeout: 10)
        try await EndpointSetup(applicationID: "app", certificationVersionID: "v", answerTimeout: 10, outputs: outputs)
            .run(on: setUp)
        let connection = try AgrirouterConnection(
            endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: spacing, timeout: timeout,
            backoff: backoff, clock: clock, monotonic: monotonic)
        let scratch = TemporaryDirectory("gateway")
        let directory = scratch.path
        var configuration = SpoolConfiguration()
        configuration.wireSize = GPSEntry.wireSize(of:)
        configuration.outputs = outputs
        configure(&configuration)
        let spool = Spool(path: directory + "/spool.sqlite", configuration: configuration)
        var publishing = Publisher.EFDI(
            description: DeviceDescription(endpointID: endpoint.deviceAlternateId, softwareVersion: "9.9.9"))
        efdi?(&publishing)
        return Rig(
            simulator: simulator, spool: spool, connection: connection,
            publisher: Publisher(
                spool: spool, connection: connection, byteBudget: byteBudget, outputs: outputs,
                efdi: outputs.contains(.efdi) ? publishing : nil, clock: clock, monotonic: monotonic),
            scratch: scratch)
    }

    func close() async {
        await simulator.shutdown()
        scratch.remove()
    }

    /// The publisher's part of a daemon's pass: publish, then one poll of the outbox, its answers
    /// handed to the publisher. A pass that failed to publish polls nothing, as in the daemon.
    func cycle(
        now: Date? = nil, uptimeNow: Double? = nil, inFlightTimeout: Double = AgrirouterLimits.outboxLifetime
    )
        async -> Publisher.CycleReport
    {
        var report = await publisher.cycle(now: now, uptimeNow: uptimeNow, inFlightTimeout: inFlightTimeout)
        guard report.error == nil else { return report }
        await connection.waitForAnswers(atMost: 2)
        do {
            _ = try await connection.poll()
        } catch {
            report.error = error
            return report
        }
        let settled = await publisher.absorb(await connection.answers(for: .publisher), now: now)
        report.acknowledged += settled.acknowledged
        report.refusals += settled.refusals
        return report
    }

    /// Cycles until the spool has nothing unsent and nothing in flight, or `limit` cycles pass.
    func drain(limit: Int = 50, uptime: (() -> Double)? = nil) async -> [Publisher.CycleReport] {
        var reports: [Publisher.CycleReport] = []
        for _ in 0..<limit {
            reports.append(await cycle(uptimeNow: uptime?()))
            let status = await spool.status()
            if status.pending + status.inFlight + status.failed == 0, await publisher.awaitingAnswers == 0 { break }
        }
        return reports
    }

    /// Every request the simulator received from this endpoint, by technical message type.
    func sent(_ type: String) async -> [DecodedRequest] {
        await simulator.sentMessages(endpoint: connection.endpoint.deviceAlternateId).filter {
            $0.envelope.technicalMessageType == type
        }
    }

    /// Every TimeLog `Time` the simulator received from this endpoint, in the order it arrived.
    func publishedTimes() async throws -> [Efdi_Time] {
        try await sent(TechnicalMessageType.timeLog).flatMap { try Efdi_TimeLog(serializedBytes: $0.payload).time }
    }

    /// Every GPSEntry the simulator received from this endpoint, in the order it arrived.
    func publishedEntries() async throws -> [GPSEntry] {
        try await simulator.sentMessages(endpoint: connection.endpoint.deviceAlternateId)
            .filter { $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }
            .flatMap { try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: $0.payload).gpsEntries }
    }
}

/// Equal entries, but for timestamps, which pass through the spool as floating-point seconds.
func same(_ received: [GPSEntry], _ expected: [GPSEntry]) -> Bool {
    received.count == expected.count
        && zip(received, expected).allSatisfy { got, want in
            var got = got
            var want = want
            let gap = abs(got.gpsUtcTimestamp.date.timeIntervalSince(want.gpsUtcTimestamp.date))
            got.clearGpsUtcTimestamp()
            want.clearGpsUtcTimestamp()
            return got == want && gap <= 0.002
        }
}

func sample(_ index: Int, state: FixState) -> PositionSample {
    let time = Date().addingTimeInterval(Double(index) - 1000)
    guard state.hasPosition else { return PositionSample(sampledAt: time, state: state, detail: "\(index)") }
    let report = PositionReport(
        time: time, gpsdMode: 3, gpsdStatus: 0, latitude: 48 + Double(index) * 1e-5, longitude: 11.5,
        altitudeHAE: 512.345, hdop: 0.8, pdop: 1.4, satellitesUsed: 15)
    return PositionSample(sampledAt: time, state: state, report: report)
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct PublisherTests {
    @Test func everySampleArrivesOnceInOrderWithItsStatusThenTheSpoolIsEmpty() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) {
            let states: [FixState] = [
                .fix(.threeD, .rtkFixed), .fix(.threeD, .rtkFloat), .fix(.threeD, .dgps), .noFix,
                .fix(.threeD, .autonomous), .noReceiver(.silent), .gpsdUnreachable, .fix(.twoD, .deadReckoning),
            ]
            let samples = (0..<40).map { sample($0, state: states[$0 % states.count]) }
            for item in samples { await rig.spool.append(item) }
            _ = await rig.drain()
            let entries = try await rig.publishedEntries()
            #expect(same(entries, samples.map { GPSEntry($0) }))
            #expect(entries.first?.positionUp == 512_345, "millimetres above the ellipsoid")
            #expect(
                entries.map(\.positionStatus).prefix(8) == [
                    .dRtkFinteger, .dRtkFloat, .dDgnss, .dNoGps, .dGnss, .dNotAvailable, .dError, .dEstDrMode,
                ])
            let status = await rig.spool.status()
            #expect(status.pending == 0 && status.inFlight == 0 && status.resent == 0)
            #expect(try await rig.spool.allSamples().isEmpty, "acknowledged samples left the spool")
        }
    }

    @Test func refusalsAreKeptRetriedAndParked() async throws {
        let rig = try await Rig.make {
            $0.retryDelay = 0.01
            $0.maximumRetryDelay = 0.01
            $0.parkAfterFailures = 3
        }
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(1, state: .fix(.threeD, .dgps)))
            for _ in 0..<3 { await rig.simulator.inject(.ackWithFailure(code: "VAL_000004")) }
            var refusals: [[String]] = []
            for _ in 0..<12 {
                refusals += await rig.cycle().refusals
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(refusals == Array(repeating: ["VAL_000004"], count: 3))
            let status = await rig.spool.status()
            #expect(status.parked == 1 && status.pending == 0)
            #expect(try await rig.publishedEntries().count == 3, "sent three times, then parked and visible")
        }
    }

    @Test func aLostAcknowledgementMeansAResendWithKnownDuplicates() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) { () async throws in
            for index in 0..<5 { await rig.spool.append(sample(index, state: .fix(.threeD, .rtkFixed))) }
            await rig.simulator.inject(.silentOutbox)
            let start = uptime()
            _ = await rig.cycle(uptimeNow: start)
            _ = await rig.cycle(uptimeNow: start)
            #expect(await rig.spool.status().inFlight == 5)
            await rig.simulator.clearFaults()
            // The system clock stepped a day ahead is no reason to give up on the answer...
            _ = await rig.cycle(now: Date().addingTimeInterval(86_400), uptimeNow: start + 299)
            #expect(await rig.publisher.awaitingAnswers == 1)
            #expect(await rig.spool.status().inFlight == 5)
            // ... the monotonic clock past the outbox's life is.
            _ = await rig.drain(uptime: { start + 301 })
            #expect(try await rig.publishedEntries().count == 10, "the batch went twice")
            let status = await rig.spool.status()
            #expect(status.resent == 5, "the possible duplicates are counted")
            #expect(status.pending == 0 && status.inFlight == 0)
        }
    }

    @Test("requests that fail before agrirouter takes them resend nothing: the resent count stays 0 through an outage")
    func anOutageResendsNothing() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) { () async throws in
            for index in 0..<5 { await rig.spool.append(sample(index, state: .fix(.threeD, .rtkFixed))) }
            await rig.simulator.inject(.serviceUnavailable(count: 3))
            var failures = 0
            for _ in 0..<20 where failures < 3 {
                if await rig.cycle().error != nil { failures += 1 }
            }
            #expect(failures == 3)
            _ = await rig.drain()
            #expect(try await rig.publishedEntries().count == 5, "sent once")
            let status = await rig.spool.status()
            #expect(status.pending == 0 && status.inFlight == 0)
            #expect(status.resent == 0, "three refused requests are no resend")
        }
    }

    @Test(
        "a batch past the outbox's life waits for one more poll: an answer that comes with it settles the batch, and nothing goes twice"
    )
    func anOverdueBatchWaitsForOneMorePoll() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) {
            for index in 0..<5 { await rig.spool.append(sample(index, state: .fix(.threeD, .rtkFixed))) }
            let start = uptime()
            _ = await rig.publisher.cycle(uptimeNow: start)
            #expect(await rig.spool.status().inFlight == 5)
            // Past the outbox's life with no poll since (agrirouter stalled all that while): not given up yet.
            _ = await rig.publisher.cycle(uptimeNow: start + 301)
            #expect(await rig.spool.status().inFlight == 5)
            #expect(try await rig.publishedEntries().count == 5)
            // The first poll after the stall brings the answer.
            _ = try await rig.connection.poll()
            let settled = await rig.publisher.absorb(await rig.connection.answers(for: .publisher))
            #expect(settled.acknowledged == 5)
            _ = await rig.publisher.cycle(uptimeNow: start + 302)
            #expect(try await rig.publishedEntries().count == 5, "sent once")
            #expect(await rig.spool.status().resent == 0)
        }
    }

    @Test func requestsWaitForATrueTimeThenCarryGNSSTimeNotTheSystemClocks() async throws {
        // A clock that has never seen a fix and does not trust the system clock (a box at "1970").
        let clock = TrueTime(plausibleFrom: .distantFuture)
        let rig = try await Rig.make(clock: clock)
        try await tearingDown({ await rig.close() }) {
            let systemNow = Date()
            // No receiver time, as gpsd unreachable gives: its time is the sample's system time, corrected.
            await rig.spool.append(PositionSample(sampledAt: systemNow.addingTimeInterval(-1), state: .gpsdUnreachable))
            let held = await rig.cycle()
            #expect(held.error == .timeUnknown && held.published == 0)
            #expect(await rig.spool.status().pending == 1, "held in the spool, not sent with a wrong time")
            #expect(try await rig.publishedEntries().isEmpty)

            // A fix says the system clock is two hours fast.
            let gnss = systemNow.addingTimeInterval(-7200)
            clock.observe(
                PositionSample(
                    sampledAt: systemNow, state: .fix(.threeD, .autonomous),
                    report: PositionReport(time: gnss, gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8)))
            _ = await rig.drain()
            let entry = try #require(try await rig.publishedEntries().first)
            #expect(
                abs(entry.gpsUtcTimestamp.date.timeIntervalSince(gnss.addingTimeInterval(-1))) < 1,
                "the sample's time, corrected")
            let envelope = try #require(
                await rig.simulator.sentMessages(endpoint: rig.connection.endpoint.deviceAlternateId)
                    .last { $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }?.envelope)
            let stamped = envelope.timestamp.date
            #expect(
                abs(stamped.timeIntervalSince(Date().addingTimeInterval(-7200))) < 5,
                "the envelope carries GNSS time, not +7200 s")
            #expect(stamped <= clock.now()!, "never ahead of the best known UTC")
        }
    }

    @Test func aTimedOutPublishWaitsForItsAnswerInsteadOfBeingSentTwice() async throws {
        let rig = try await Rig.make(timeout: 1)
        try await tearingDown({ await rig.close() }) {
            for index in 0..<3 { await rig.spool.append(sample(index, state: .fix(.threeD, .rtkFixed))) }
            // agrirouter takes the batch and answers it, but the HTTP reply comes after our timeout.
            await rig.simulator.inject(.stallPublish(seconds: 2))
            let first = await rig.cycle()
            #expect(first.error == .transport(.timedOut))
            #expect(await rig.publisher.awaitingAnswers == 1, "the batch waits for its answer")
            let afterTimeout = await rig.spool.status()
            #expect(afterTimeout.inFlight == 3 && afterTimeout.pending == 0)
            try await Task.sleep(for: .seconds(2.5))
            let reports = await rig.drain()
            #expect(reports.map(\.acknowledged).reduce(0, +) == 3)
            #expect(try await rig.publishedEntries().count == 3, "sent once: no duplicate")
            let status = await rig.spool.status()
            #expect(status.inFlight == 0 && status.pending == 0 && status.resent == 0)
        }
    }

    @Test func anHTTPErrorOrARefusedConnectionReleasesTheBatchAtOnce() async throws {
        let time = ManualClock()
        let rig = try await Rig.make(spacing: 0, monotonic: time.clock)
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(1, state: .fix(.threeD, .dgps)))
            await rig.simulator.inject(.serviceUnavailable(count: 1))
            let first = await rig.cycle()
            #expect(first.error == .transport(.serverError(503)))
            let status = await rig.spool.status()
            #expect(await rig.publisher.awaitingAnswers == 0, "a 503 was not taken")
            #expect(status.pending == 1, "sent again next cycle")
            // Nobody listening any more: the request never left, so nothing waits for an answer.
            await rig.simulator.shutdown()
            time.advance(by: try #require(await rig.connection.backingOff()))  // past the backoff of the 503
            let refused = await rig.cycle()
            guard case .transport(let error)? = refused.error, !Publisher.mayHaveArrived(.transport(error)) else {
                Issue.record("\(String(describing: refused.error))")
                return
            }
            #expect(await rig.publisher.awaitingAnswers == 0)
            #expect(await rig.spool.status().pending == 1)
        }
    }

    /// A request waiting on `time`: it has not gone a hair before `wait`, and goes at `wait`.
    /// Returns what it returned once it has.
    private func goesAfter<T: Sendable>(
        _ wait: Double, on time: ManualClock, _ request: @escaping @Sendable () async -> T
    ) async -> (T, sleptToTheEnd: Bool) {
        let waiting = Task { await request() }
        await time.sleepers(atLeast: 1)
        time.advance(by: wait - 0.001)
        let stillWaiting = time.sleeping == 1
        time.advance(by: 0.001)
        return (await waiting.value, stillWaiting)
    }

    @Test("a transport error backs off 5, 10, 20, 20 s (virtual time): no request goes sooner, and a success ends it")
    func transportErrorsBackOffDoublingToTheCapAndASuccessEndsIt() async throws {
        let time = ManualClock()
        let rig = try await Rig.make(
            spacing: 0, backoff: Backoff(first: 5, maximum: 20, jitter: 0), monotonic: time.clock)
        try await tearingDown({ await rig.close() }) {
            await rig.simulator.inject(.serviceUnavailable(count: 4))
            let before = await rig.simulator.gatewayRequestArrivals().count
            _ = try? await rig.connection.fetchOutbox()
            var waits: [Double] = []
            for _ in 0..<4 {
                let wait = try #require(await rig.connection.backingOff())
                let (_, heldBack) = await goesAfter(wait, on: time) { _ = try? await rig.connection.fetchOutbox() }
                #expect(heldBack, "a request went before its backoff of \(wait) s was out")
                waits.append(wait)
            }
            #expect(waits == [5, 10, 20, 20])
            #expect(await rig.simulator.gatewayRequestArrivals().count == before + 5)
            let failures = await rig.connection.consecutiveFailures
            let backingOff = await rig.connection.backingOff()
            #expect(failures == 0 && backingOff == nil, "the fifth went through")
            #expect(
                Backoff().delay(afterFailures: 1) == 5 && Backoff().delay(afterFailures: 3) == 20
                    && Backoff().delay(afterFailures: 10_000) == 20)
        }
    }

    @Test("each backoff is stretched or shrunk by its jitter, within ±20 %, each by a different amount (virtual time)")
    func jitterKeepsEachWaitWithinItsFraction() async throws {
        let time = ManualClock()
        let rig = try await Rig.make(
            spacing: 0, backoff: Backoff(first: 5, maximum: 5, jitter: 0.2), monotonic: time.clock)
        try await tearingDown({ await rig.close() }) {
            var waits: [Double] = []
            for _ in 0..<12 {
                await rig.simulator.inject(.serviceUnavailable(count: 1))
                _ = try? await rig.connection.send(TechnicalMessageType.listEndpoints, payload: nil)
                let wait = try #require(await rig.connection.backingOff())
                await rig.simulator.clearFaults()
                // Waits the backoff out, succeeds, and resets it.
                let (_, heldBack) = await goesAfter(wait, on: time) { _ = try? await rig.connection.fetchOutbox() }
                #expect(heldBack)
                waits.append(wait)
            }
            #expect(waits.allSatisfy { (4...6).contains($0) }, "\(waits)")
            #expect(Set(waits.map { ($0 * 100).rounded() }).count > 1, "the waits differ: \(waits)")
        }
    }

    @Test func anOutageLosesNothingAndABacklogDrainsInFullBatches() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) {
            // Ten minutes at 20 Hz while agrirouter answers 503.
            let backlog = (0..<12_000).map { sample($0, state: .fix(.threeD, .rtkFixed)) }
            await rig.spool.append(backlog)
            await rig.simulator.inject(.serviceUnavailable(count: 4))
            let reports = await rig.drain()
            #expect(reports.prefix(4).allSatisfy { $0.error == .transport(.serverError(503)) })
            let entries = try await rig.publishedEntries()
            #expect(entries.count == backlog.count)
            #expect(same(entries, backlog.map { GPSEntry($0) }))
            let batches = reports.filter { $0.published > 0 }.map(\.published)
            let perBatch = AgrirouterLimits.payloadBytes / GPSEntry.wireSize(of: backlog[0])
            #expect(batches.count == (backlog.count + perBatch - 1) / perBatch, "full batches: \(batches)")
        }
    }

    @Test func aFullBatchFitsTheCapAndA413IsAFailureNotALoop() async throws {
        // A full batch at the default budget is accepted whole.
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append((0..<15_000).map { sample($0, state: .fix(.threeD, .rtkFixed)) })
            let first = await rig.cycle()
            #expect(first.error == nil && first.published > 11_000, "\(first)")

            // An agrirouter with a smaller cap answers 413: the batch fails, backs off, and is not resent in a loop.
            // the subscription (with its DDI list) still fits
            let strict = try await Rig.make(simulatorPayloadCap: 2000) { $0.retryDelay = 3600 }
            await tearingDown({ await strict.close() }) {
                await strict.spool.append((0..<100).map { sample($0, state: .fix(.threeD, .rtkFixed)) })
                let refused = await strict.cycle()
                #expect(refused.error == .transport(.payloadTooLarge))
                let again = await strict.cycle()
                #expect(again.published == 0 && again.error == nil)
                #expect(await strict.spool.status().failed == 100)
            }
        }
    }

    @Test("requests keep agrirouter's spacing of 5 s (virtual time): publishes and polls alike, none a hair sooner")
    func requestsKeepTheirSpacing() async throws {
        let time = ManualClock()
        let rig = try await Rig.make(spacing: 5, byteBudget: 150, monotonic: time.clock)  // two samples a batch
        await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(0, state: .fix(.threeD, .rtkFixed)))
            // The first request goes at once; the poll after it waits its turn.
            let (first, _) = await goesAfter(5, on: time) { await rig.cycle() }
            #expect(first.published == 1)
            for index in 1...6 { await rig.spool.append(sample(index, state: .fix(.threeD, .rtkFixed))) }
            let start = await rig.simulator.gatewayRequestArrivals().count
            // Three cycles of a publish and a poll: six requests, each 5 s after the one before.
            let cycles = Task { for _ in 0..<3 { _ = await rig.cycle() } }
            var heldBack: [Bool] = []
            for _ in 0..<6 {
                await time.sleepers(atLeast: 1)
                time.advance(by: 4.999)
                heldBack.append(time.sleeping == 1)
                time.advance(by: 0.001)
            }
            await cycles.value
            #expect(heldBack == Array(repeating: true, count: 6), "\(heldBack)")
            #expect(await rig.simulator.gatewayRequestArrivals().count == start + 6)
            #expect(await rig.spool.status().pending == 0)
        }
    }
}
