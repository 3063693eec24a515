import ArgumentParser

/// The `mqttchat` command line tool.
@main
struct MQTTChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mqttchat",
        abstract: "Real-time chat over MQTT: a broker, a client and chat commands.",
        subcommands: [
            BrokerCommand.self,
            PublishCommand.self,
            SubscribeCommand.self,
            ChatCommand.self,
            HistoryCommand.self,
            PasswdCommand.self,
            BenchCommand.self,
        ]
    )
}
