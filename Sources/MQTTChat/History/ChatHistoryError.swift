/// Failures of the local history database.
public enum ChatHistoryError: Error, Sendable {
    /// The database file could not be created or opened, or its migrations failed.
    case openFailed(path: String, underlying: any Error)
    /// Reading or writing a message failed.
    case queryFailed(underlying: any Error)
    /// A stored row holds a value that cannot be turned back into a message (e.g. an invalid room name).
    case corruptRow(messageID: String, column: String)
}
