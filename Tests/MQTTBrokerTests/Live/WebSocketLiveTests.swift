import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import NIOPosix
import Testing

@testable import MQTTBroker

/// Runs `body` with an in-process broker that has a plain MQTT listener and a `protocol websockets` listener (with
/// `httpDirectory` as its http_dir), both on 127.0.0.1 at free ports, and always shuts it down.
func withWebSocketBroker<T>(
    httpDirectory: String? = nil, loops: Int = 1, _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    _ body: (_ tcp: SocketAddress, _ webSocket: SocketAddress) async throws -> T
) async throws -> T {
    try await withEventLoopGroup(threads: loops) { group in
        var configuration = BrokerConfiguration()
        configuration.sysInterval = nil
        configuration.eventLoopCount = loops
        configuration.listeners = [
            .init(host: "127.0.0.1", port: 0),
            .init(host: "127.0.0.1", port: 0, transportProtocol: .websockets, httpDirectory: httpDirectory),
        ]
        configure(&configuration)
        let (server, addresses) = try await startInProcessBroker(
            configuration, logger: brokerTestLogger, eventLoopGroup: group)
        do {
            let result = try await body(addresses[0], addresses[1])
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }
}

/// MQTT over WebSockets on a real socket: the upgrade, MQTT in binary frames however they are cut, and the WebSocket
/// rules (control frames, the close handshake, masking, data types, the frame size bound).
@Suite("MQTT over WebSockets", .timeLimit(.minutes(1)))
struct WebSocketLiveTests {
    private func connected(_ address: SocketAddress, _ clientID: String) async throws -> RawWebSocket {
        let socket = try await RawWebSocket.open(to: address)
        try await socket.send(.connect(ConnectPacket(clientIdentifier: clientID)))
        guard case .connack(let connack) = try await socket.nextPacket(), connack.returnCode == .accepted else {
            throw HarnessError("\(clientID): no accepting CONNACK")
        }
        return socket
    }

    @Test("the upgrade answers the subprotocol offered; CONNECT and CONNACK travel in binary frames")
    func upgradeAndConnect() async throws {
        try await withWebSocketBroker { _, address in
            let socket = try await RawWebSocket.open(to: address, path: "/mqtt", subprotocols: ["mqtt"])
            #expect(socket.responseHeaders["sec-websocket-protocol"] == "mqtt")
            try await socket.send(.connect(ConnectPacket(clientIdentifier: "ws-a")))
            let frame = try await socket.nextFrame()
            #expect(frame.opcode == RawWebSocket.binary && frame.fin)
            #expect(frame.payload == [0x20, 0x02, 0x00, 0x00])  // CONNACK, accepted
            await socket.close()

            // Any path; MQTT 3.1 clients offer mqttv3.1; the first offered of ours wins.
            let v31 = try await RawWebSocket.open(to: address, path: "/", subprotocols: ["chat", "mqttv3.1", "mqtt"])
            #expect(v31.responseHeaders["sec-websocket-protocol"] == "mqttv3.1")
            await v31.close()
        }
    }

    @Test("an upgrade offering neither mqtt nor mqttv3.1 (or nothing) is refused with 400")
    func subprotocolRequired() async throws {
        try await withWebSocketBroker { _, address in
            for offer in [["chat"], []] {
                let request = RawWebSocket.upgradeRequest(path: "/mqtt", subprotocols: offer)
                let response = try await HTTPTestResponse.fetch(request, from: address)
                #expect(response.status == 400, "offer \(offer)")
            }
        }
    }

    @Test("a frame split over TCP writes, and two packets in one frame")
    func framesAndWrites() async throws {
        try await withWebSocketBroker { _, address in
            let socket = try await RawWebSocket.open(to: address)
            let connectAndSubscribe = try RawWebSocket.mqtt(
                .connect(ConnectPacket(clientIdentifier: "ws-split")),
                .subscribe(SubscribePacket(packetID: 7, subscriptions: [.init(topicFilter: "ws/split", qos: .atLeastOnce)])))
            let frame = RawWebSocket.frame(RawWebSocket.binary, connectAndSubscribe)
            for cut in [frame[..<1], frame[1..<5], frame[5...]] {  // header, mask and payload torn apart
                try await socket.sendRaw(Array(cut))
                try await Task.sleep(for: .milliseconds(20))
            }
            guard case .connack = try await socket.nextPacket() else { throw HarnessError("no CONNACK") }
            guard case .suback(let suback) = try await socket.nextPacket() else { throw HarnessError("no SUBACK") }
            #expect(suback.packetID == 7)
            await socket.close()
        }
    }

    @Test("a packet split over two frames, and a fragmented message with continuation frames")
    func packetAcrossFrames() async throws {
        try await withWebSocketBroker { _, address in
            let socket = try await RawWebSocket.open(to: address)
            let connect = try RawWebSocket.mqtt(.connect(ConnectPacket(clientIdentifier: "ws-frag")))
            // Two complete messages, each carrying half of CONNECT.
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.binary, Array(connect[..<5])))
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.binary, Array(connect[5...])))
            guard case .connack = try await socket.nextPacket() else { throw HarnessError("no CONNACK") }

            // One message in three fragments: SUBSCRIBE, then a PUBLISH to it, cut anywhere.
            let bytes = try RawWebSocket.mqtt(
                .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "ws/frag", qos: .atMostOnce)])),
                .publish(PublishPacket(topic: "ws/frag", payload: ByteBuffer(string: "pieces"))))
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.binary, Array(bytes[..<3]), fin: false))
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.continuation, Array(bytes[3..<12]), fin: false))
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.continuation, Array(bytes[12...]), fin: true))
            guard case .suback = try await socket.nextPacket() else { throw HarnessError("no SUBACK") }
            guard case .publish(let publish) = try await socket.nextPacket() else { throw HarnessError("no PUBLISH") }
            #expect(publish.payload == ByteBuffer(string: "pieces"))
            await socket.close()
        }
    }

    @Test("ping is answered with a pong carrying its payload")
    func pingPong() async throws {
        try await withWebSocketBroker { _, address in
            let socket = try await connected(address, "ws-ping")
            try await socket.sendRaw(RawWebSocket.frame(RawWebSocket.ping, Array("are you there".utf8)))
            #expect(try await socket.nextFrame() == .init(opcode: RawWebSocket.pong, fin: true, payload: Array("are you there".utf8)))
            try await socket.send(.pingreq(PingReqPacket()))  // MQTT still flows
            guard case .pingresp = try await socket.nextPacket() else { throw HarnessError("no PINGRESP") }
            await socket.close()
        }
    }

    @Test("close handshake: the client's close is echoed; DISCONNECT makes the broker close with 1000")
    func closeHandshake() async throws {
        try await withWebSocketBroker { _, address in
            let client = try await connected(address, "ws-close")
            try await client.sendRaw(RawWebSocket.frame(RawWebSocket.close, [0x03, 0xE8]))
            let echo = try await client.nextFrame()
            #expect(echo.opcode == RawWebSocket.close && echo.closeCode == 1000)
            #expect(await client.connection.closedByBroker(within: .seconds(5)))

            let leaving = try await connected(address, "ws-leaving")
            try await leaving.send(.disconnect(DisconnectPacket()))
            #expect(try await leaving.nextFrame().closeCode == 1000)
            #expect(await leaving.connection.closedByBroker(within: .seconds(5)))
        }
    }

    @Test("an unmasked frame closes that connection with 1002, a text frame with 1003; others carry on")
    func ruleBreakers() async throws {
        try await withWebSocketBroker { _, address in
            let bystander = try await connected(address, "ws-bystander")
            let connect = try RawWebSocket.mqtt(.connect(ConnectPacket(clientIdentifier: "ws-unmasked")))

            let unmasked = try await RawWebSocket.open(to: address)
            try await unmasked.sendRaw(RawWebSocket.frame(RawWebSocket.binary, connect, masked: false))
            #expect(try await unmasked.nextFrame().closeCode == 1002)
            #expect(await unmasked.connection.closedByBroker(within: .seconds(5)))

            let texter = try await connected(address, "ws-text")
            try await texter.sendRaw(RawWebSocket.frame(RawWebSocket.text, Array("hello".utf8)))
            #expect(try await texter.nextFrame().closeCode == 1003)
            #expect(await texter.connection.closedByBroker(within: .seconds(5)))

            try await bystander.send(.pingreq(PingReqPacket()))
            guard case .pingresp = try await bystander.nextPacket() else { throw HarnessError("bystander lost") }
            await bystander.close()
        }
    }

    @Test("a frame above the size bound closes the connection with 1009 as soon as its header arrives")
    func oversizedFrame() async throws {
        try await withWebSocketBroker { _, address in
            let socket = try await connected(address, "ws-huge")
            let header = RawWebSocket.frame(RawWebSocket.binary, [], claimedLength: 64 << 20)
            try await socket.sendRaw(header)
            #expect(try await socket.nextFrame().closeCode == 1009)
            #expect(await socket.connection.closedByBroker(within: .seconds(5)))
        }
    }

    @Test("WebSocket and TCP clients share one broker, also with sockets on two loops", arguments: [1, 2])
    func interop(loops: Int) async throws {
        try await withWebSocketBroker(loops: loops) { tcp, webSocket in
            let browser = try await connected(webSocket, "ws-browser")
            try await browser.send(
                .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "mix/#", qos: .atLeastOnce)])))
            guard case .suback = try await browser.nextPacket() else { throw HarnessError("no SUBACK") }
            let (terminal, _) = try await LiveClient.connect(to: tcp, ConnectPacket(clientIdentifier: "tcp-terminal"))
            _ = try await terminal.subscribe("mix/#", qos: .atLeastOnce)

            try await terminal.send(.publish(PublishPacket(topic: "mix/tcp", payload: ByteBuffer(string: "from tcp"))))
            guard case .publish(let fromTCP) = try await browser.nextPacket() else { throw HarnessError("no PUBLISH") }
            #expect(fromTCP.payload == ByteBuffer(string: "from tcp"))

            try await browser.send(.publish(PublishPacket(
                topic: "mix/ws", payload: ByteBuffer(string: "from ws"), qos: .atLeastOnce, packetID: 9)))
            var sawAck = false
            var sawOwnCopy = false
            while !(sawAck && sawOwnCopy) {
                switch try await browser.nextPacket() {
                case .puback(let ack): sawAck = ack.packetID == 9
                case .publish(let own) where own.topic == "mix/ws":
                    sawOwnCopy = true
                    try await browser.send(.puback(PubAckPacket(packetID: own.packetID ?? 0)))
                default: break
                }
            }
            var fromWS = try await terminal.nextPublish()
            if fromWS.topic == "mix/tcp" { fromWS = try await terminal.nextPublish() }  // its own message first
            #expect(fromWS.topic == "mix/ws" && fromWS.payload == ByteBuffer(string: "from ws"))
            await terminal.close()
            await browser.close()
        }
    }
}
