import LiveTestSupport
import MQTTClient

extension TestBrokerKind {
    /// The CONNACK refusal a wrong password gets. MQTT 3.1.1 section 3.2.2.3 defines 4 "bad user name or
    /// password" for exactly this, and our broker sends it; mosquitto 2.0.11 answers 5 "not authorized" instead.
    var wrongPasswordRefusal: MQTTClientError {
        switch self {
        case .mosquitto: .notAuthorized
        case .mqttchat: .badUsernameOrPassword
        }
    }
}
