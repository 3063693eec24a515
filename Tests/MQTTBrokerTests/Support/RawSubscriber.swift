import LiveTestSupport
import MQTTCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// A blocking socket to the broker on 127.0.0.1:`port` that has sent CONNECT (`clientID`, clean session) and a
/// SUBSCRIBE to `topic` at `qos`, with a `receiveBufferSize`-byte receive buffer set before connecting: a subscriber
/// whose window stays small, for tests of what the broker does when a client reads slowly or not at all. The caller
/// reads the CONNACK and SUBACK (or never reads) and closes the socket.
func rawSubscriberSocket(
    port: Int, clientID: String, topic: String, qos: QoS, receiveBufferSize: Int32 = 4096
) throws -> CInt {
    let descriptor = try connectedSocket(port: port, receiveBufferSize: receiveBufferSize)
    var buffer = ByteBuffer()
    do {
        try MQTTPacketEncoder.encode(.connect(ConnectPacket(clientIdentifier: clientID)), into: &buffer)
        try MQTTPacketEncoder.encode(
            .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: topic, qos: qos)])),
            into: &buffer)
        guard sendAll(descriptor, buffer) else { throw HarnessError("CONNECT and SUBSCRIBE not sent, errno \(errno)") }
    } catch {
        close(descriptor)
        throw error
    }
    return descriptor
}

/// Writes all of `buffer` to a blocking socket (without `SIGPIPE`); whether it was all taken.
func sendAll(_ descriptor: CInt, _ buffer: ByteBuffer) -> Bool {
    let bytes = Array(buffer.readableBytesView)
    return bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
}
