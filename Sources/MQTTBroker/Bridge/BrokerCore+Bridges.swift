#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

extension BrokerCore {
    /// Starts the configured bridges, once persistence is recovered (so a bridge's local session resumes with its
    /// queue) and the listeners are bound. Remote connections run on `remoteGroup`, a SwiftNIO group.
    func startBridges(remoteGroup: any EventLoopGroup) {
        eventLoop.assertInEventLoop()
        let hostName = Self.hostName()
        for configuration in configuration.bridges {
            do {
                let bridge = try BridgeConnection(
                    configuration: configuration, core: self, remoteGroup: remoteGroup, hostName: hostName)
                bridges.append(bridge)
                bridge.start()
            } catch {
                logger.error(
                    "bridge not started: its TLS files cannot be loaded",
                    metadata: ["bridge": "\(configuration.name)", "error": "\(error)"])
            }
        }
    }

    /// Stops every bridge's remote side and reconnects (shutdown; the core closes the local sides).
    func stopBridges() {
        for bridge in bridges { bridge.stop() }
    }

    /// Per-bridge `$SYS` values: state, connections made, and messages forwarded each way.
    var bridgeSysValues: [(topic: String, value: String)] {
        bridges.flatMap { bridge -> [(topic: String, value: String)] in
            let prefix = "$SYS/broker/bridge/\(bridge.name)"
            return [
                ("\(prefix)/state", bridge.machine.isConnected ? "1" : "0"),
                ("\(prefix)/connections", "\(bridge.connectCount)"),
                ("\(prefix)/messages/sent", "\(bridge.machine.messagesSent)"),
                ("\(prefix)/messages/received", "\(bridge.machine.messagesReceived)"),
            ]
        }
    }

    /// mosquitto's default remote client id is `HOSTNAME.CONNECTION`.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }
}
