import Foundation
import LiveTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A one-connection MQTT 5 "broker" that accepts a CONNECT, answers CONNACK 0, then sends a DISCONNECT with
/// `reasonCode` and a Reason String and closes. mosquitto 2.0.11 closes connections without a DISCONNECT
/// (session takeover, shutdown, …), so a server DISCONNECT can only be tested against a scripted peer.
/// Every wait is bounded by `poll(2)`.
func serveOneDisconnect(listener: Int32, reasonCode: UInt8, reasonString: String) throws {
    func ready(_ fd: Int32, _ milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }
    guard ready(listener, 5000) else { throw HarnessError("no client connected to the scripted server") }
    let connection = accept(listener, nil, nil)
    guard connection >= 0 else { throw HarnessError("accept failed, errno \(errno)") }
    defer { close(connection) }
    guard ready(connection, 5000) else { throw HarnessError("no CONNECT arrived") }
    var buffer = [UInt8](repeating: 0, count: 1024)
    guard recv(connection, &buffer, buffer.count, 0) > 0, buffer[0] == 0x10 else {
        throw HarnessError("expected a CONNECT")
    }
    let reason = Array(reasonString.utf8)
    let properties: [UInt8] = [0x1F, UInt8(reason.count >> 8), UInt8(reason.count & 0xFF)] + reason
    let disconnect: [UInt8] = [reasonCode, UInt8(properties.count)] + properties
    let packets: [UInt8] = [0x20, 0x03, 0x00, 0x00, 0x00] + [0xE0, UInt8(disconnect.count)] + disconnect
    guard send(connection, packets, packets.count, 0) == packets.count else { throw HarnessError("send failed") }
    // Wait (bounded) for the client to close its side, so the DISCONNECT is read before the socket closes.
    _ = ready(connection, 2000)
}
