/// How a user is shown to others: the design notes' `UserInfo {level, name, iconURL}`.
public struct UserProfile: Sendable, Hashable {
    /// The display name.
    public var name: String
    /// The user's level (a badge shown next to the name).
    public var level: Int32
    /// Where the user's avatar image is; may be empty.
    public var iconURL: String

    /// Creates a profile.
    public init(name: String, level: Int32 = 0, iconURL: String = "") {
        self.name = name
        self.level = level
        self.iconURL = iconURL
    }
}

extension UserProfile {
    init(_ proto: ProtoUserInfo) {
        self.init(name: proto.name, level: proto.level, iconURL: proto.iconURL)
    }

    var proto: ProtoUserInfo {
        var info = ProtoUserInfo()
        info.name = name
        info.level = level
        info.iconURL = iconURL
        return info
    }
}
