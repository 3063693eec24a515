// swift-tools-version: 6.1
// mqttchat: real-time chat over MQTT on Linux.
//
// Layers (arrows point at what a module depends on):
//   MQTTCore (packets + codec, NIOCore only) <- MQTTBroker <- mqttchat (CLI)
//   CLinuxSockets (epoll, eventfd, accept4) <- EpollEventLoop (an EventLoop of our own on epoll, the epoll set
//   and listening socket the broker's socket watcher uses) <- MQTTBroker
//   CMosquitto (libmosquitto shim) <- MQTTClient <- MQTTChat <- mqttchat (CLI)
// The client side never imports the broker.
// Sources/ holds only these modules and the CLI. The measurement tools are packages of their own beside it:
// Benchmarks/ (floors, client and codec benchmarks, bench scripts; it uses this package's library products) and
// Fuzz/ (the packet decoder's libFuzzer target).
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
        // For the Benchmarks package (a path dependency sees only products): EpollRelayFloor runs on
        // EpollEventLoop and CLinuxSockets, MQTTClientBench calls libmosquitto's C API beside MQTTClient.
        .library(name: "EpollEventLoop", targets: ["EpollEventLoop"]),
        .library(name: "CLinuxSockets", targets: ["CLinuxSockets"]),
        .library(name: "CMosquitto", targets: ["CMosquitto"]),
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
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
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
                // HTTP/1.1 and the WebSocket upgrade for `protocol websockets` listeners (and their `http_dir`).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // Prometheus metrics (Metrics/): swift-metrics handles backed by a per-broker registry.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
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

        // MARK: Load generator (benchmarks brokers over real sockets)
        .target(
            name: "MQTTLoadGen",
            dependencies: [
                "MQTTCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The HTTP/1.1 upgrade and WebSocket frames of `mqttchat bench --transport ws`.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
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
        // A client that connects with a will and sleeps; MQTTClientTests SIGKILL it to see the will published.
        .executableTarget(
            name: "MQTTClientProbe",
            dependencies: ["MQTTClient", "MQTTCore"],
            path: "Tests/MQTTClientProbe",
            swiftSettings: strictSettings
        ),
        // Live-test harness shared by the client, chat and load-generator tests: our broker in-process or a real
        // mosquitto on a free 127.0.0.1 port, TLS files, sockets and subprocesses.
        .target(
            name: "LiveTestSupport",
            dependencies: [
                "MQTTBroker",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
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
                .product(name: "NIOWebSocket", package: "swift-nio"),
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
                "MQTTLoadGen", "MQTTCore", "MQTTBroker", "LiveTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
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
