import Foundation
import GPSDReplay
import Testing
import TestSupport
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
        defer { Task { await samples.stop() } }

        let down = await samples.waitFor(timeout: 5) { $0.state == .gpsdUnreachable }
        #expect(down != nil, "no gpsd_unreachable sample while gpsd is down")
        #expect(await samples.items.allSatisfy { $0.state == .gpsdUnreachable })

        var options = ReplayGPSD.Options()
        options.port = port
        options.realTime = true
        let gpsd = try ReplayGPSD(log: try log("ublox-8"), options: options)
        defer { gpsd.stop() }
        let up = await samples.waitFor(from: down ?? 0, timeout: 15) { $0.state.hasPosition }
        #expect(up != nil, "no fix sample after gpsd started")
        if let up { #expect(await samples.items[up].report?.latitude != nil) }
    }

    @Test func silentReceiverBecomesNoReceiver() async throws {
        var options = ReplayGPSD.Options()
        options.endWithEOF = false  // the feed stays connected but says nothing more
        let gpsd = try ReplayGPSD(log: try log("bu353s4"), options: options)
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
        defer {
            tee.cancel()
            Task { await samples.stop() }
        }
        let fix = await samples.waitFor(timeout: 10) { $0.state.hasPosition }
        #expect(fix != nil)
        let silent = await samples.waitFor(from: fix ?? 0, timeout: 10) { $0.state == .noReceiver(.silent) }
        #expect(silent != nil, "a connected but silent receiver was not reported as no_receiver")
        let quiet = await events.waitFor(timeout: 1) { if case .receiverSilent = $0 { true } else { false } }
        #expect(quiet != nil)
    }

    @Test func endOfFeedIsDeviceRemoval() async throws {
        let gpsd = try ReplayGPSD(log: try log("ublox-lea-4h"))
        defer { gpsd.stop() }
        let events = Recorder<SourceEvent>()
        await events.start(source(port: gpsd.address.port).events())
        defer { Task { await events.stop() } }
        let removed = await events.waitFor(timeout: 10) {
            if case .deviceRemoved(let path) = $0 { return path.hasPrefix("tcp://127.0.0.1:") }
            return false
        }
        #expect(removed != nil)
        let items = await events.items
        #expect(items.first == .connected(gpsd.address))
        #expect(items.filter { if case .report = $0 { true } else { false } }.count == 18)
    }

    @Test func killedGPSDIsDisconnectionThenUnreachable() async throws {
        var options = ReplayGPSD.Options()
        options.realTime = true
        let gpsd = try ReplayGPSD(log: try log("telit-he910"), options: options)
        let events = Recorder<SourceEvent>()
        await events.start(source(port: gpsd.address.port).events())
        defer { Task { await events.stop() } }
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
