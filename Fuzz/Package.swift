// swift-tools-version: 6.1
// The decoder fuzzer's own package (scripts/fuzz.sh builds it with --sanitize=fuzzer).
//
// Its targets are the fuzz target FuzzPacketDecoder (Sources/FuzzPacketDecoder) and the main package's MQTTCore
// (Sources/MQTTCore is a symlink to ../../Sources/MQTTCore), its only dependency is swift-nio, and it asks for
// libFuzzer's coverage instrumentation of those two modules: with this toolchain `-sanitize=fuzzer` alone adds no
// coverage counters to Swift code, and fuzzer builds of the main package had them only some of the time.
// scripts/fuzz.sh checks every MQTTCore object for them. The coverage flag needs a sanitizer, so there is no plain
// build: reproducers and corpora are replayed by the fuzzer binary itself (scripts/fuzz.sh --replay FILE_OR_DIR...).
import PackageDescription

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // libFuzzer's coverage guidance, for our modules only (not NIO's). Needs --sanitize=fuzzer (scripts/fuzz.sh).
    .unsafeFlags(["-sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp"]),
]

let package = Package(
    name: "mqttchat-fuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2")
    ],
    targets: [
        .target(
            name: "MQTTCore",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "FuzzPacketDecoder",
            dependencies: ["MQTTCore", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: settings
        ),
    ]
)
