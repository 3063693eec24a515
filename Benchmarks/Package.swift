// swift-tools-version: 6.1
// mqttchat's measurement tools, a package of their own so that the main package's Sources/ holds only the product
// (as swift-nio and hummingbird keep their benchmarks). It uses the main package's library products by path, and
// swift-nio and swift-protobuf at the versions the main package asks for. Commands: Benchmarks/README.md.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "mqttchat-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "mqttchat", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
    ],
    targets: [
        // The memory floor of an idle connection on SwiftNIO (bench-broker.sh's idle run).
        .executableTarget(
            name: "NIOFloorServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The latency floor of an MQTT forwarder on SwiftNIO (docs/benchmarks.md: latency).
        .executableTarget(
            name: "NIORelayFloor",
            dependencies: [
                .product(name: "MQTTCore", package: "mqttchat"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The same forwarder on a transport of its own (one epoll loop, no SwiftNIO): what leaving NIO could buy.
        .executableTarget(
            name: "EpollRelayFloor",
            dependencies: [
                .product(name: "CLinuxSockets", package: "mqttchat"),
                .product(name: "EpollEventLoop", package: "mqttchat"),
            ],
            swiftSettings: strictSettings
        ),
        // Publish throughput through MQTTClient versus libmosquitto's C API, against a mosquitto it starts.
        .executableTarget(
            name: "MQTTClientBench",
            dependencies: [
                .product(name: "MQTTClient", package: "mqttchat"),
                .product(name: "MQTTCore", package: "mqttchat"),
                .product(name: "CMosquitto", package: "mqttchat"),
            ],
            swiftSettings: strictSettings
        ),
        // Chat envelopes, protobuf versus JSON: size and encode+decode time.
        .executableTarget(
            name: "ChatCodecBench",
            dependencies: [
                .product(name: "MQTTChat", package: "mqttchat"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
