// swift-tools-version: 6.1
// mqttchat: real-time chat over MQTT on Linux.
//
// Layers (arrows point at what a module depends on):
//   MQTTCore (packets + codec, NIOCore only) <- MQTTBroker <- mqttchat (CLI)
//   CLinuxSockets (epoll, eventfd, accept4) <- EpollEventLoop (an EventLoop of our own on epoll, the epoll set
//   and listening socket the broker's socket watcher uses) <- MQTTBroker, EpollRelayFloor
//   CMosquitto (libmosquitto shim) <- MQTTClient <- MQTTChat <- mqttchat (CLI)
// The client side never imports the broker.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "mqttchat",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "mqttchat", targets: ["mqttchat"]),
        .library(name: "MQTTCore", targets: ["MQTTCore"]),
        .library(name: "MQTTBroker", targets: ["MQTTBroker"]),
        .library(name: "MQTTClient", targets: ["MQTTClient"]),
        .library(name: "MQTTChat", targets: ["MQTTChat"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // MARK: Protocol layer
        .target(
            name: "MQTTCore",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strictSettings
        ),

        // MARK: Transport
        // An EventLoop of our own on epoll (raw descriptors instead of SwiftNIO channels), and the epoll set and
        // listening socket it shares with the broker's socket watcher.
        .target(
            name: "EpollEventLoop",
            dependencies: [
                "CLinuxSockets",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Broker
        // epoll, eventfd and accept4 for the broker's socket watcher (parking idle connections).
        .systemLibrary(name: "CLinuxSockets"),
        .target(
            name: "MQTTBroker",
            dependencies: [
                "MQTTCore",
                "CLinuxSockets",
                "EpollEventLoop",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Persistence/README.md"],
            swiftSettings: strictSettings
        ),

        // MARK: Client over libmosquitto
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .target(
            name: "MQTTClient",
            dependencies: ["CMosquitto", "MQTTCore"],
            swiftSettings: strictSettings
        ),
        // A client that connects with a will and sleeps; MQTTClientTests SIGKILL it to see the will published.
        .executableTarget(
            name: "MQTTClientProbe",
            dependencies: ["MQTTClient", "MQTTCore"],
            swiftSettings: strictSettings
        ),
        // Publish throughput through MQTTClient versus libmosquitto's C API, against a mosquitto it starts.
        .executableTarget(
            name: "MQTTClientBench",
            dependencies: ["MQTTClient", "MQTTCore", "CMosquitto"],
            swiftSettings: strictSettings
        ),

        // MARK: Chat layer
        .target(
            name: "MQTTChat",
            dependencies: [
                "MQTTClient",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Proto/chat.proto", "TOPICS.md"],
            swiftSettings: strictSettings
        ),

        // MARK: Benchmark: protobuf vs JSON envelopes (swift run -c release ChatCodecBench)
        .executableTarget(
            name: "ChatCodecBench",
            dependencies: ["MQTTChat", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strictSettings
        ),

        // MARK: Load generator (benchmarks brokers over real sockets)
        .target(
            name: "MQTTLoadGen",
            dependencies: [
                "MQTTCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Command line
        .executableTarget(
            name: "mqttchat",
            dependencies: [
                "MQTTCore",
                "MQTTBroker",
                "MQTTLoadGen",
                "MQTTClient",
                "MQTTChat",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Fuzzing
        // libFuzzer target for the packet decoder: scripts/fuzz.sh builds it with -DFUZZING and the fuzzer and
        // address sanitizers; a plain build is a corpus replayer (FuzzPacketDecoder FILE_OR_DIR...).
        // The memory floor of an idle connection on SwiftNIO (bench-broker.sh's idle run).
        .executableTarget(
            name: "NIOFloorServer",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strictSettings
        ),
        // The latency floor of an MQTT forwarder on SwiftNIO (README, Benchmarks: latency).
        .executableTarget(
            name: "NIORelayFloor",
            dependencies: ["MQTTCore", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strictSettings
        ),
        // The same forwarder on a transport of its own (one epoll loop, no SwiftNIO): what leaving NIO could buy.
        .executableTarget(
            name: "EpollRelayFloor",
            dependencies: ["CLinuxSockets", "EpollEventLoop"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "FuzzPacketDecoder",
            dependencies: ["MQTTCore", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strictSettings
        ),

        // MARK: Examples
        // A room bot embedding ChatClient (examples/RoomBot). A target of this package rather than a nested
        // package, so CI builds it with the rest instead of resolving and compiling the dependencies twice.
        .executableTarget(
            name: "RoomBot",
            dependencies: ["MQTTChat", "MQTTClient"],
            path: "examples/RoomBot/Sources/RoomBot",
            swiftSettings: strictSettings
        ),

        // MARK: Tests
        // Live-test harness shared by the client, chat and load-generator tests: our broker in-process or a real
        // mosquitto on a free 127.0.0.1 port, TLS files, sockets and subprocesses.
        .target(
            name: "LiveTestSupport",
            dependencies: [
                "MQTTBroker",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LiveTestSupport"
        ),
        .testTarget(
            name: "MQTTCoreTests",
            dependencies: [
                "MQTTCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "EpollEventLoopTests",
            dependencies: [
                "EpollEventLoop",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "MQTTBrokerTests",
            dependencies: [
                "MQTTBroker", "MQTTCore", "LiveTestSupport", "EpollEventLoop",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "MQTTClientTests",
            dependencies: [
                "MQTTClient", "MQTTCore", "MQTTBroker", "MQTTClientProbe", "LiveTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "MQTTLoadGenTests",
            dependencies: [
                "MQTTLoadGen", "MQTTCore", "LiveTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "MQTTChatTests",
            dependencies: [
                "MQTTChat", "MQTTClient", "MQTTBroker", "LiveTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
