/// A validated user id. It is also the user's MQTT client id and one level of its inbox and status topics.
public struct UserID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The id as given.
    public let rawValue: String

    /// Validates `rawValue` with `validator`.
    public init(_ rawValue: String, validator: ChatNameValidator = ChatNameValidator()) throws(ChatNameError) {
        try validator.validate(rawValue)
        self.rawValue = rawValue
    }

    public static func < (lhs: UserID, rhs: UserID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}
