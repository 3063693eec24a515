/// The Swift MQTT client over libmosquitto lives in this module (issue 3).
public enum MQTTClientModule {}
