public import MQTTClient

/// Errors thrown by ``ChatClient``.
public enum ChatError: Error, Sendable {
    /// The MQTT client failed (connecting, subscribing or publishing).
    case mqtt(MQTTClientError)
    /// The local history database failed.
    case history(ChatHistoryError)
    /// The operation needs a joined room and this room was not joined.
    case notJoined(RoomName)
    /// The operation needs ``ChatClient/connect()`` first.
    case notConnected
    /// An envelope could not be serialized.
    case encodingFailed
}
