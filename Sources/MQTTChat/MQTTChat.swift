/// The chat layer (protobuf envelopes, rooms, presence, history) lives in this module (issue 4).
public enum MQTTChatModule {}
