import MQTTClient

/// Opening and closing the plain MQTT connection of `publish` and `subscribe`.
enum MQTTConnection {
    /// Creates a client for `options` plus the mosquitto-style `flags` and connects it, or fails with the matching
    /// exit code; `properties` are the parsed `-D` values (their CONNECT and will parts apply here). `beforeConnect` runs on the new client before CONNECT is sent: with `-c` the broker sends queued
    /// messages right after CONNACK, so a message stream must exist by then or they are lost.
    static func open(
        _ options: ClientOptions, _ flags: MosquittoFlags, properties: MQTT5PropertyFlags, clientID: String,
        reconnect: ReconnectPolicy,
        beforeConnect: (MQTTClient) -> Void = { _ in }
    ) async throws(CLIFailure) -> MQTTClient {
        let address = options.address(tls: flags.usesTLS)
        var configuration = options.configuration(clientID: clientID, reconnect: reconnect, tls: flags.usesTLS)
        try flags.apply(to: &configuration, clientID: options.clientID, properties: properties)
        let client: MQTTClient
        do {
            client = try MQTTClient(configuration: configuration)
        } catch {
            throw CLIFailure(error, address: address)
        }
        beforeConnect(client)
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
            throw CLIFailure(.unavailable, "\(address) did not accept the connection within \(options.connectTimeout) s")
        case .some(.some(let error)):
            throw CLIFailure(error, address: address)
        case .some(.none):
            return client
        }
    }
}
