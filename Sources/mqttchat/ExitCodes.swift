/// Process exit codes of `mqttchat`, distinct per failure so scripts can tell them apart.
enum ExitCodes {
    /// Success.
    static let success: Int32 = 0
    /// Generic failure.
    static let failure: Int32 = 1
    /// Command line usage error (ArgumentParser's own code).
    static let usage: Int32 = 64
    /// The configuration file is missing or invalid.
    static let configInvalid: Int32 = 78
    /// The broker could not bind a listener.
    static let listenFailed: Int32 = 71
    /// The broker could not be reached (connection refused, DNS, TLS).
    static let brokerUnreachable: Int32 = 69
    /// The broker refused the credentials or the client.
    static let authenticationRefused: Int32 = 77
    /// A topic, room or user name is invalid.
    static let invalidName: Int32 = 65
}
