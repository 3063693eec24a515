import CMosquitto
import Foundation

/// Helpers to turn libmosquitto return codes into ``MQTTClientError``s.
enum MosquittoError {
    static let success = Int32(MOSQ_ERR_SUCCESS.rawValue)
    static let noConnection = Int32(MOSQ_ERR_NO_CONN.rawValue)

    /// The text libmosquitto gives for `code`.
    static func message(_ code: Int32) -> String {
        guard let text = mosquitto_strerror(code) else { return "mosquitto error \(code)" }
        return String(cString: text)
    }

    /// Maps a failed `mosquitto_connect` (with the `errno` read right after it) to an error.
    static func connectError(code: Int32, errno savedErrno: Int32, host: String) -> MQTTClientError {
        switch code {
        case Int32(MOSQ_ERR_EAI.rawValue):
            return .dnsFailure(host: host)
        case Int32(MOSQ_ERR_TLS.rawValue):
            return .tlsHandshakeFailed(message(code))
        case Int32(MOSQ_ERR_ERRNO.rawValue):
            switch savedErrno {
            case ECONNREFUSED: return .connectionRefused
            case EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, ENETDOWN, EHOSTDOWN: return .hostUnreachable
            case EPROTO: return .tlsHandshakeFailed(String(cString: strerror(savedErrno)))
            default: return .mosquitto(code: code, message: String(cString: strerror(savedErrno)))
            }
        default:
            return operationError(code)
        }
    }

    /// Maps the `rc` of `on_disconnect` for a connection that closed unexpectedly.
    static func lossError(_ code: Int32) -> MQTTClientError {
        switch code {
        case Int32(MOSQ_ERR_KEEPALIVE.rawValue): return .timeout
        case Int32(MOSQ_ERR_TLS.rawValue):
            return .tlsHandshakeFailed(message(code))
        case Int32(MOSQ_ERR_PROTOCOL.rawValue), Int32(MOSQ_ERR_MALFORMED_PACKET.rawValue):
            return .protocolError(message(code))
        default: return .mosquitto(code: code, message: message(code))
        }
    }

    /// Maps the result of publish / subscribe / unsubscribe calls.
    static func operationError(_ code: Int32) -> MQTTClientError {
        switch code {
        case noConnection, Int32(MOSQ_ERR_CONN_LOST.rawValue): return .notConnected
        case Int32(MOSQ_ERR_PROTOCOL.rawValue): return .protocolError(message(code))
        default: return .mosquitto(code: code, message: message(code))
        }
    }
}
