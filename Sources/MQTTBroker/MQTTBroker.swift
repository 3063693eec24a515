/// The native SwiftNIO MQTT broker lives in this module (issue 2).
public enum MQTTBrokerModule {}
