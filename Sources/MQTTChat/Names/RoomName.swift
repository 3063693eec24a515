/// A validated chat room name: safe to use as one MQTT topic level.
public struct RoomName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The name as the user typed it.
    public let rawValue: String

    /// Validates `rawValue` with `validator`.
    public init(_ rawValue: String, validator: ChatNameValidator = ChatNameValidator()) throws(ChatNameError) {
        try validator.validate(rawValue)
        self.rawValue = rawValue
    }

    public static func < (lhs: RoomName, rhs: RoomName) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}
