// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "agrigps",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "agrigps", targets: ["agrigps"]),
        .executable(name: "agrigps-web", targets: ["agrigps-web"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.28.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
        // The cab view's web server. No traits: neither swift-configuration nor full Foundation is needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
    ],
    targets: [
        // The ranges every number from outside is checked against, and text made safe for a terminal.
        .target(name: "Bounds"),
        // JSON written straight out, byte for byte as JSONEncoder writes it, and the one encoder setup.
        .target(name: "JSONText"),
        // Homes for blocking work away from Swift's cooperative pool: a serial executor on a thread of
        // its own (the stores' SQLite commits and fsyncs), and a thread per rare blocking wait.
        .target(name: "BlockingWork"),
        // The state directory's files opened safely: no links followed, no FIFO waited on, small files
        // replaced whole with their mode set.
        .target(name: "StateFiles"),
        // Time: the monotonic clock, the system clock taken as a dependency, the best known UTC
        // (from a fix or agrirouter's Date) and UTC written as ISO 8601.
        .target(name: "Clocks"),
        // libgps (gpsd's client library) with a shim for what Swift cannot import directly.
        .systemLibrary(
            name: "CGPS",
            path: "Sources/CGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        // Position and fix-state model, the gpsd-backed source and the sampler.
        .target(
            name: "GNSS",
            dependencies: [
                "JSONText",
                "BlockingWork",
                "Clocks",
                "Bounds",
                "CGPS",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // NMEA 2000 / ISO 11783 on a CAN bus: candump recordings, fast packets, the GNSS PGNs and
        // the search for the receiver's source address. No I/O.
        .target(name: "NMEA2000", dependencies: ["GNSS"]),
        // The tractor's own broadcasts on the same bus (ISO 11783-7, SAE J1939-71): speeds, hitches,
        // PTOs, engine and fuel, who sent them, and the work state they make. No I/O.
        .target(name: "Machine", dependencies: ["NMEA2000", "GNSS"]),
        // Linux's SocketCAN headers, for a raw CAN socket.
        .systemLibrary(name: "CSocketCAN", path: "Sources/CSocketCAN"),
        // A CAN interface read through a raw SocketCAN socket, never written to.
        .target(name: "CANBus", dependencies: ["NMEA2000", "Machine", "GNSS", "GPSDReplay", "Clocks", "CSocketCAN", "BlockingWork"]),
        // The durable outbox: every sample is committed here first and leaves only when acknowledged.
        .target(
            name: "Spool",
            dependencies: [
                "Clocks",
                "StateFiles",
                "BlockingWork",
                "Bounds",
                "GNSS",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The machine's own record: its track kept apart from the spool, exported as GPX, GeoJSON or
        // CSV, and its working figures per day.
        .target(
            name: "Track",
            dependencies: [
                "JSONText",
                "Clocks",
                "StateFiles",
                "BlockingWork",
                "GNSS",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // zlib, for the deflated entries of TaskData zips (linked: it is small and always on the box).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The farm's fields: ISO 11783-10 TaskData (ISOXML) read from a zip, a folder or TASKDATA.XML,
        // their areas on the ellipsoid, which field a position lies in, and their store.
        .target(
            name: "Fields",
            dependencies: [
                "JSONText",
                "BlockingWork",
                "StateFiles",
                "CZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // libcurl's headers, with a shim that opens the library at its first use (it is not linked:
        // a daemon that never talks HTTPS never maps it) and wraps its variadic functions.
        .systemLibrary(
            name: "CCurl",
            path: "Sources/CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The one libcurl client: the agrirouter link and the cab view's tile cache both request through it.
        .target(name: "CurlHTTP", dependencies: ["CCurl", "Bounds", "BlockingWork"]),
        // libmosquitto's headers, for the MQTT transport, with a shim that opens the library at its
        // first use (it is not linked: it brings libssl, and a daemon that never talks MQTT never maps it).
        .systemLibrary(
            name: "CMosquitto",
            path: "Sources/CMosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // OpenSSL's libcrypto, to check a credential (key, secret, certificate) before it is stored,
        // and for the cab view's password hash; opened at its first use, not linked.
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            providers: [.apt(["libssl-dev"])]
        ),
        // agrirouter's wire format: the protobuf messages (generated from Protos/ by
        // script/regenerate-protobuf), envelopes, framing, the measures body, outbox decoding, and
        // every agrirouter limit. No C and no I/O: the local agrirouter depends on this alone.
        .target(
            name: "AgrirouterWire",
            dependencies: [
                "JSONText",
                "Bounds",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // How the box reaches agrirouter: onboarding, the credentials, the two transports behind one
        // Link protocol (REST over libcurl, MQTT over libmosquitto), and the connection that spaces
        // requests, backs off and routes each answer to its sender.
        .target(
            name: "AgrirouterLink",
            dependencies: [
                "JSONText",
                "CurlHTTP",
                "BlockingWork",
                "Clocks",
                "StateFiles",
                "Bounds",
                "AgrirouterWire",
                "CMosquitto",
                "COpenSSL",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The layer the daemon and the readers both stand on: the configuration file and its
        // thresholds, the state directory's files (heartbeat, lock, the other machines' store), and
        // onboarding from a TAN to stored credentials.
        .target(
            name: "StateDirectory",
            dependencies: [
                "JSONText",
                "Clocks",
                "StateFiles",
                "BlockingWork",
                "Bounds",
                "GNSS",
                "Spool",
                "Track",
                "AgrirouterWire",
                "AgrirouterLink",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's parts: the endpoint set-up, the send cycle and the feed reader, run as services.
        .target(
            name: "Gateway",
            dependencies: [
                "JSONText",
                "Clocks",
                "StateDirectory",
                "Fields",
                "StateFiles",
                "BlockingWork",
                "Bounds",
                "GNSS",
                "Spool",
                "Track",
                "AgrirouterWire",
                "AgrirouterLink",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // SHA-1 for EFDI's name-based team set context ids.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What the CLI and the cab view read from the state directory, every database opened read-only:
        // the status verdict, the other machines seen from our own position, our own newest samples.
        .target(
            name: "StateView",
            dependencies: [
                "JSONText",
                "BlockingWork",
                "Clocks",
                "StateFiles",
                "Bounds",
                "GNSS",
                "Spool",
                "AgrirouterWire",
                "AgrirouterLink",
                "StateDirectory",
                "Track",
                "Fields",
            ]
        ),
        // The cab view: a small web page (map, sharing, settings) served by `agrigps web`, a process of its own.
        .target(
            name: "CabView",
            dependencies: [
                "JSONText",
                "Clocks",
                "StateFiles",
                "BlockingWork",
                "Bounds",
                "GNSS",
                "Spool",
                "AgrirouterWire",
                "AgrirouterLink",
                "StateDirectory",
                "StateView",
                "Track",
                "COpenSSL",
                "CurlHTTP",
                "Fields",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the basemap's MBTiles reads (Basemap.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The page's files, compiled into the binary as bytes (no bundle to install beside it).
            resources: [.embedInCode("Page/index.html"), .embedInCode("Page/app.css"), .embedInCode("Page/app.js"),
                        .embedInCode("Page/lang/en.json"), .embedInCode("Page/lang/de.json")]
        ),
        // The local agrirouter: onboarding with TANs, client-certificate REST, validation, outbox, routing.
        .target(
            name: "AgrirouterSim",
            dependencies: [
                "JSONText",
                "AgrirouterWire",
                "Clocks",
                "ChildProcesses",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .executableTarget(
            name: "agrirouter-sim",
            dependencies: ["AgrirouterSim", "BlockingWork", "CommandSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        // posix_spawn's close-from action, which glibc declares only for _GNU_SOURCE.
        .systemLibrary(name: "CSpawn", path: "Sources/CSpawn"),
        // mallopt, to keep glibc's malloc arenas as few as the box has cores.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        // Children with a clean signal mask and none of our descriptors, and children that die with us.
        .target(name: "ChildProcesses", dependencies: ["BlockingWork", "CSpawn"]),
        // A private gpsd fed from a recorded NMEA log: used by `agrigps replay` and by the tests.
        .target(
            name: "GPSDReplay",
            dependencies: ["Clocks", "BlockingWork", "Bounds", "ChildProcesses", "GNSS", "StateFiles"]
        ),
        // What every command-line program shares: option groups, one-line errors, exit codes, the safe log.
        .target(
            name: "CommandSupport",
            dependencies: [
                "Bounds",
                "CMalloc",
                "StateDirectory",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "agrigps",
            dependencies: [
                "JSONText",
                "Clocks",
                "StateFiles",
                "NMEA2000",
                "Machine",
                "CANBus",
                "Bounds",
                "GNSS",
                "GPSDReplay",
                "AgrirouterWire",
                "AgrirouterLink",
                "Spool",
                "Gateway",
                "StateDirectory",
                "Track",
                "StateView",
                "CommandSupport",
                "Fields",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `agrigps web`: the cab view's server, a program of its own so that the daemon links no web server.
        .executableTarget(
            name: "agrigps-web",
            dependencies: [
                "Bounds",
                "GNSS",
                "StateDirectory",
                "StateView",
                "CabView",
                "CommandSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Fixture paths, gpsd's .chk reader and process checks shared by the test targets.
        .target(name: "TestSupport", dependencies: ["Clocks", "ChildProcesses", "GNSS", "NMEA2000", "Machine", "GPSDReplay", "AgrirouterWire", "AgrirouterLink", "AgrirouterSim",
                                                   .product(name: "SwiftProtobuf", package: "swift-protobuf")],
                path: "Tests/TestSupport"),
        // Benchmarks that print each figure beside its baseline: swift run -c release agrigps-bench
        .executableTarget(
            name: "agrigps-bench",
            dependencies: ["ChildProcesses", "Spool", "GNSS", "GPSDReplay", "Gateway", "AgrirouterWire", "AgrirouterLink", "AgrirouterSim", "TestSupport",
                           "Track", "Fields", "CANBus", "Machine", "NMEA2000", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")],
            path: "Benchmarks/agrigps-bench"
        ),
        .testTarget(name: "BlockingWorkTests", dependencies: ["BlockingWork", "TestSupport"]),
        .testTarget(name: "ClocksTests", dependencies: ["Clocks", "TestSupport"]),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText", "TestSupport",
                                                      .product(name: "PropertyBased", package: "swift-property-based")]),
        .testTarget(name: "AgrirouterWireTests", dependencies: ["AgrirouterWire", "Bounds", "TestSupport",
                                                             .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "AgrirouterLinkTests", dependencies: ["Clocks", "AgrirouterLink", "AgrirouterWire", "AgrirouterSim", "TestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: ["Clocks", "Gateway", "StateView", "Spool", "StateDirectory", "AgrirouterWire", "AgrirouterLink", "AgrirouterSim", "GNSS", "Bounds", "Fields", "TestSupport",
                                                     .product(name: "PropertyBased", package: "swift-property-based"),
                                                     .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        // An endpoint written from DKE's documentation, not from agrigps (no AgrirouterLink, no libcurl,
        // no libmosquitto), reading what agrigps publishes through the local agrirouter.
        .testTarget(name: "DocumentedPeerTests", dependencies: ["AgrirouterSim", "AgrirouterWire", "TestSupport",
                                                             .product(name: "NIOCore", package: "swift-nio"),
                                                             .product(name: "NIOPosix", package: "swift-nio"),
                                                             .product(name: "NIOHTTP1", package: "swift-nio"),
                                                             .product(name: "NIOSSL", package: "swift-nio-ssl"),
                                                             .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "AgrirouterSimTests", dependencies: ["ChildProcesses", "AgrirouterSim", "AgrirouterWire", "AgrirouterLink", "Gateway", "GNSS", "GPSDReplay", "TestSupport",
                                                            .product(name: "X509", package: "swift-certificates"),
                                                            .product(name: "Crypto", package: "swift-crypto"),
                                                            .product(name: "SwiftASN1", package: "swift-asn1"),
                                                            .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "StateDirectoryTests", dependencies: ["StateDirectory", "Spool", "Track", "AgrirouterWire", "TestSupport",
                                                            .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "StateViewTests", dependencies: ["StateView", "JSONText", "StateDirectory", "Spool", "GNSS", "AgrirouterWire", "TestSupport",
                                                      "Track", "Fields", .product(name: "PropertyBased", package: "swift-property-based")]),
        .testTarget(name: "CabViewTests", dependencies: ["CabView", "StateView", "StateDirectory", "Spool", "GNSS", "Track", "AgrirouterWire", "AgrirouterLink", "AgrirouterSim",
                                                     "TestSupport", "Fields", .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "PropertyBased", package: "swift-property-based"),
                                                     .product(name: "Logging", package: "swift-log"),
                                                     .product(name: "NIOCore", package: "swift-nio"),
                                                     .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "NMEA2000Tests", dependencies: ["NMEA2000", "GNSS", "TestSupport"]),
        .testTarget(name: "MachineTests", dependencies: ["Machine", "NMEA2000", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
                    exclude: ["Peer"]),
        .testTarget(name: "CANBusTests", dependencies: ["CANBus", "CSocketCAN", "NMEA2000", "GNSS", "GPSDReplay", "TestSupport"]),
        .testTarget(name: "GNSSTests", dependencies: ["Clocks", "GNSS", "GPSDReplay", "TestSupport"]),
        .testTarget(name: "FieldsTests", dependencies: ["Fields", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "TrackTests", dependencies: ["Track", "GNSS", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "GPSDReplayTests", dependencies: ["GPSDReplay", "GNSS", "TestSupport"]),
        .testTarget(name: "agrigpsTests", dependencies: ["Clocks", "ChildProcesses", "GPSDReplay", "TestSupport", "AgrirouterSim", "AgrirouterWire", "AgrirouterLink", "Spool", "StateDirectory", "StateView", "GNSS", "Machine",
                                                     "StateFiles",
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        // The mutation campaign over every decoder of other parties' input: script/fuzz runs it.
        .executableTarget(name: "agrigps-fuzz", dependencies: ["AgrirouterWire", "AgrirouterLink", "AgrirouterSim", "Bounds", "Gateway", "StateView", "GNSS", "TestSupport",
                                                              .product(name: "SwiftProtobuf", package: "swift-protobuf")],
                          path: "Tests/Fuzz"),
        // Runs a spool in a process of its own, for the crash and read-only-directory tests.
        .executableTarget(name: "spool-exerciser", dependencies: ["Spool", "GNSS"], path: "Tests/SpoolExerciser"),
        // spool-exerciser is run, not imported: the crash tests need its binary built.
        .testTarget(name: "SpoolTests", dependencies: ["ChildProcesses", "Spool", "GNSS", "GPSDReplay", "TestSupport", "spool-exerciser",
                                                       .product(name: "GRDB", package: "GRDB.swift")]),
    ]
)
