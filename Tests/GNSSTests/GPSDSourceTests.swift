import Foundation
import GPSDReplay
import Synchronization
import TestSupport
import Testing

@testable import GNSS

/// The source and sampler against a real gpsd fed from recorded logs.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct GPSDSourceTests {
    private func source(port: UInt16, silence: Double = 5) -> GPSDSource {
        var configuration = GPSDSource.Configuration(address: GPSDAddress(host: "127.0.0.1", port: port))
        configuration.initialBackoff = 0.05
        configuration.maximumBackoff = 0.3
        configuration.silenceThreshold = silence
        return GPSDSource(configuration: configuration)
    }

    private func log(_ name: String) throws -> NMEALog { try NMEALog(contentsOf: Fixtures.log(name)) }

    @Test func unreachableGPSDIsSampledThenRecoversWhenGPSDStarts() async throws {
        let port = try ReplayGPSD.freeLoopbackPort()
        let samples = Recorder<PositionSample>()
        await samples.start(Sampler(interval: 0.2).samples(from: source(port: port).events()))
        try await tearingDown({ await samples.stop() }) {

            let down = await samples.waitFor(timeout: 5) { $0.state == .gpsdUnreachable }
            #expect(down != nil, "no gpsd_unreachable sample while gpsd is down")
            // A sample taken before the first connection attempt failed says "no fix" (nothing heard
            // yet), which a loaded machine shows; from the first "unreachable" on, every one says so.
            let early = await samples.items
            #expect(early.allSatisfy { $0.state == .gpsdUnreachable || $0.state == .noFix })
            #expect(early[(down ?? 0)...].allSatisfy { $0.state == .gpsdUnreachable })

            var options = ReplayGPSD.Options()
            options.port = port
            options.realTime = true
            let gpsd = try await ReplayGPSD.start(log: try log("ublox-8"), options: options)
            defer { gpsd.stop() }
            let up = await samples.waitFor(from: down ?? 0, timeout: 15) { $0.state.hasPosition }
            #expect(up != nil, "no fix sample after gpsd started")
            if let up { #expect(await samples.items[up].report?.latitude != nil) }
        }
    }

    @Test(
        "a source's adjustment reaches every report before it is sampled: a CAN receiver's RTK fixed over gpsd's plain fix"
    )
    func adjustedReports() async throws {
        let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"), options: ReplayGPSD.Options())
        defer { gpsd.stop() }
        var configuration = GPSDSource.Configuration(address: gpsd.address)
        configuration.reconnects = false
        configuration.finishWhenDeviceRemoved = true
        configuration.adjust = { report in
            var adjusted = report
            if adjusted.gpsdMode >= 2 { adjusted.gpsdStatus = 3 }
            return adjusted
        }
        var states: [FixState] = []
        for await sample in Sampler(interval: 1, skewLimit: nil).samples(
            from: GPSDSource(configuration: configuration).events())
        {
            states.append(sample.state)
        }
        #expect(
            states.contains(.fix(.threeD, .rtkFixed))
                && !states.contains { if case .fix(_, .autonomous) = $0 { true } else { false } }, "\(states)")
    }

    /// A gpsd replaying a log that never ends, and a source on it that calls 0.5 s without reports silence.
    func endlessReplay() async throws -> (ReplayGPSD, GPSDSource.Configuration) {
        var options = ReplayGPSD.Options()
        options.endWithEOF = false
        let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"), options: options)
        return (gpsd, source(port: gpsd.address.port, silence: 0.5).configuration)
    }

    @Test(
        "reports the adjustment sets aside (another receiver's) are as if gpsd had sent none: no receiver, never their fix"
    )
    func setAsideReports() async throws {
        let (gpsd, endless) = try await endlessReplay()
        defer { gpsd.stop() }
        var configuration = endless
        let seen = Mutex(0)
        configuration.adjust = { _ in
            seen.withLock { $0 += 1 }
            return nil
        }
        let samples = Recorder<PositionSample>()
        await samples.start(
            Sampler(interval: 0.2, skewLimit: nil).samples(from: GPSDSource(configuration: configuration).events()))
        await tearingDown({ await samples.stop() }) {
            let silent = await samples.waitFor(timeout: 10) { $0.state == .noReceiver(.silent) }
            #expect(silent != nil, "reports set aside did not leave the receiver silent")
            #expect(seen.withLock { $0 } > 0, "no report reached the adjustment")
            #expect(await !samples.items.contains { $0.state.hasPosition })
        }
    }

    @Test("while gpsd reports nothing, the stand-in source's reports are sampled, and the receiver is not silent")
    func standInReports() async throws {
        let (gpsd, endless) = try await endlessReplay()
        defer { gpsd.stop() }
        var configuration = endless
        configuration.adjust = { _ in nil }
        let asked = Mutex(0)
        configuration.standIn = {
            let second = asked.withLock { count -> Int? in
                count += 1
                return count.isMultiple(of: 2) ? count / 2 : nil
            }
            return second.map {
                PositionReport(
                    time: Date(timeIntervalSince1970: 1_767_254_400 + Double($0)), gpsdMode: 3, gpsdStatus: 3,
                    latitude: 52.5, longitude: 13.25, altitudeHAE: 61)
            }
        }
        let samples = Recorder<PositionSample>()
        await samples.start(
            Sampler(interval: 0.2, skewLimit: nil).samples(from: GPSDSource(configuration: configuration).events()))
        await tearingDown({ await samples.stop() }) {
            let fixes = await samples.waitFor(timeout: 10) {
                $0.state == .fix(.threeD, .rtkFixed) && $0.report?.latitude == 52.5
            }
            #expect(fixes != nil, "no sample of the stand-in's fix")
            try? await Task.sleep(for: .seconds(1.5))
            #expect(
                await !samples.items.contains { $0.state == .noReceiver(.silent) }, "silent though the stand-in reports"
            )
            #expect(asked.withLock { $0 } >= 6, "asked about four times a second")
        }
    }

    @Test func silentReceiverBecomesNoReceiver() async throws {
        var options = ReplayGPSD.Options()
        options.endWithEOF = false  // the feed stays connected but says nothing more
        let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"), options: options)
        defer { gpsd.stop() }
        let events = Recorder<SourceEvent>()
        let (relay, feed) = AsyncStream.makeStream(of: SourceEvent.self)
        let samples = Recorder<PositionSample>()
        await samples.start(Sampler(interval: 0.2, skewLimit: nil).samples(from: relay))
        let upstream = source(port: gpsd.address.port, silence: 0.5).events()
        let tee = Task {
            for await event in upstream {
                await events.append(event)
                feed.yield(event)
            }
            feed.finish()
        }
        await tearingDown({
            tee.cancel()
            await samples.stop()
        }) {
            let fix = await samples.waitFor(timeout: 10) { $0.state.hasPosition }
            #expect(fix != nil)
            let silent = await samples.waitFor(from: fix ?? 0, timeout: 10) { $0.state == .noReceiver(.silent) }
            #expect(silent != nil, "a connected but silent receiver was not reported as no_receiver")
            let quiet = await events.waitFor(timeout: 1) { if case .receiverSilent = $0 { true } else { false } }
            #expect(quiet != nil)
        }
    }

    @Test func endOfFeedIsDeviceRemoval() async throws {
        let gpsd = try await ReplayGPSD.start(log: try log("ublox-lea-4h"))
        defer { gpsd.stop() }
        let events = Recorder<SourceEvent>()
        await events.start(source(port: gpsd.address.port).events())
        await tearingDown({ await events.stop() }) {
            let removed = await events.waitFor(timeout: 10) {
                if case .deviceRemoved(let path) = $0 { return path.hasPrefix("tcp://127.0.0.1:") }
                return false
            }
            #expect(removed != nil)
            let items = await events.items
            #expect(items.first == .connected(gpsd.address))
            #expect(items.filter { if case .report = $0 { true } else { false } }.count == 18)
        }
    }

    @Test func killedGPSDIsDisconnectionThenUnreachable() async throws {
        var options = ReplayGPSD.Options()
        options.realTime = true
        let gpsd = try await ReplayGPSD.start(log: try log("telit-he910"), options: options)
        let events = Recorder<SourceEvent>()
        await events.start(source(port: gpsd.address.port).events())
        await tearingDown({ await events.stop() }) {
            let report = await events.waitFor(timeout: 10) { if case .report = $0 { true } else { false } }
            #expect(report != nil)
            gpsd.stop()
            let lost = await events.waitFor(timeout: 10) { if case .disconnected = $0 { true } else { false } }
            #expect(lost != nil, "gpsd going away was not reported")
            let retry = await events.waitFor(from: lost ?? 0, timeout: 10) {
                if case .unreachable(let error) = $0 { return error.kind == .cannotConnect }
                return false
            }
            #expect(retry != nil, "the source did not keep trying to reconnect")
            #expect(gpsd.processIDs.allSatisfy(Processes.isGone))
        }
    }

    // MARK: - Sampling on the reader thread

    /// A one-shot source that ends with the log, as a replay is read.
    private func oneShot(port: UInt16) -> GPSDSource {
        var configuration = GPSDSource.Configuration(address: GPSDAddress(host: "127.0.0.1", port: port))
        configuration.reconnects = false
        configuration.finishWhenDeviceRemoved = true
        return GPSDSource(configuration: configuration)
    }

    @Test("sampling on the reader thread gives the fixes the sampler gives on the events, and passes the events on")
    func readerThreadSamplesMatchTheSampler() async throws {
        let sampler = Sampler(interval: 1, skewLimit: nil)
        let first = try await ReplayGPSD.start(log: try log("ublox-8"))
        defer { first.stop() }
        var onThread: [SamplerOutput] = []
        for await output in oneShot(port: first.address.port).sampled(by: sampler) { onThread.append(output) }
        let second = try await ReplayGPSD.start(log: try log("ublox-8"))
        defer { second.stop() }
        var viaEvents: [PositionSample] = []
        for await sample in sampler.samples(from: oneShot(port: second.address.port).events()) {
            viaEvents.append(sample)
        }

        // Fixes fall in receiver-time intervals, so both ways agree on them exactly.
        let fixes = { (samples: [PositionSample]) in
            samples.filter(\.state.hasPosition).map { [$0.receiverTime, $0.report?.latitude] as [AnyHashable?] }
        }
        let threadFixes = fixes(onThread.compactMap(\.sample))
        #expect(threadFixes.count >= 3)
        #expect(threadFixes == fixes(viaEvents))
        #expect(onThread.first == .event(.connected(first.address)))
        #expect(
            onThread.last.map { if case .event(.deviceRemoved) = $0 { true } else { false } } == true,
            "the stream ends with the log")
        #expect(
            !onThread.contains { if case .event(.report) = $0 { true } else { false } },
            "reports stay on the reader thread")
    }

    @Test("with gpsd unreachable, the reader thread still samples every interval")
    func readerThreadSamplesWhileGPSDIsDown() async throws {
        let port = try ReplayGPSD.freeLoopbackPort()
        let outputs = Recorder<SamplerOutput>()
        await outputs.start(source(port: port).sampled(by: Sampler(interval: 0.2)))
        await tearingDown({ await outputs.stop() }) {
            let fifth = await outputs.waitFor(timeout: 5) { _ in false }
            #expect(fifth == nil)
            let samples = await outputs.items.compactMap(\.sample)
            // About 25 in 5 s; the backoff between attempts must not hold them back.
            #expect(samples.count >= 20 && samples.count <= 27, "\(samples.count) samples in 5 s at 0.2 s")
            #expect(samples.allSatisfy { $0.state == .gpsdUnreachable })
            #expect(await outputs.items.first.map { if case .event(.unreachable) = $0 { true } else { false } } == true)
        }
    }
}
