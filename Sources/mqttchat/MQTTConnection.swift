import MQTTClient

/// Opening and closing the plain MQTT connection of `publish` and `subscribe`.
enum MQTTConnection {
    /// Creates a client for `options` and connects it, or fails with the matching exit code.
    static func open(_ options: ClientOptions, clientID: String, reconnect: ReconnectPolicy) async throws(CLIFailure)
        -> MQTTClient
    {
        let client: MQTTClient
        do {
            client = try MQTTClient(configuration: options.configuration(clientID: clientID, reconnect: reconnect))
        } catch {
            throw CLIFailure(error, address: options.address)
        }
        let outcome = await withDeadline(seconds: options.connectTimeout) { () async -> MQTTClientError? in
            do throws(MQTTClientError) {
                try await client.connect()
                return nil
            } catch {
                return error
            }
        }
        switch outcome {
        case .none:
            throw CLIFailure(.unavailable, "\(options.address) did not accept the connection within \(options.connectTimeout) s")
        case .some(.some(let error)):
            throw CLIFailure(error, address: options.address)
        case .some(.none):
            return client
        }
    }
}
