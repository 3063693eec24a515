import Foundation

/// What one run measured. Pub/sub scenarios fill the delivery fields; idle mode fills ``idle``.
public struct LoadGenResult: Sendable, Hashable, Codable {
    /// Results of an idle-connections run.
    public struct Idle: Sendable, Hashable, Codable {
        /// Connections that completed CONNECT / CONNACK.
        public var connections: Int
        /// Seconds from the first connect attempt to the last CONNACK.
        public var connectSeconds: Double
        /// Connections per second.
        public var connectsPerSecond: Double
        /// Broker VmRSS before opening the connections, KiB.
        public var brokerRSSBeforeKiB: Int?
        /// Broker VmRSS with all connections open, KiB.
        public var brokerRSSAfterKiB: Int?
        /// (after - before) / connections, bytes.
        public var brokerBytesPerConnection: Double?
    }

    /// What a process (the broker, or the generator itself) spent on a publish/subscribe run: from just before
    /// the publishers start to the end of the drain.
    public struct ProcessUsage: Sendable, Hashable, Codable {
        /// Seconds between the two samples.
        public var wallSeconds: Double
        /// CPU seconds in user mode.
        public var userSeconds: Double
        /// CPU seconds in the kernel (system calls, and on loopback the TCP receive path of what it sends).
        public var systemSeconds: Double
        /// `read`-family system calls; nil when `/proc/PID/io` was not readable.
        public var readSyscalls: Int?
        /// `write`-family system calls; nil when `/proc/PID/io` was not readable.
        public var writeSyscalls: Int?
        /// CPU seconds / wall seconds: 1 is one core kept busy.
        public var busyFraction: Double
        /// CPU time (user + system) per delivered message, microseconds.
        public var cpuMicrosPerDelivery: Double?
        /// Read and write system calls per delivered message.
        public var syscallsPerDelivery: Double?
    }

    /// What PUBLISH packets cost on the wire in a publish/subscribe run (fixed header, topic or alias, packet
    /// identifier, MQTT 5 properties and payload).
    public struct PublishWireSize: Sendable, Hashable, Codable {
        /// One PUBLISH that carries the topic name and no alias, in bytes (publisher 0's topic).
        public var withTopic: Int
        /// With topic aliases: every PUBLISH after a publisher's first (empty topic, Topic Alias 1), in bytes; the
        /// first carries the topic and the alias, 3 bytes more than ``withTopic``. Nil without topic aliases.
        public var withAlias: Int?
        /// Bytes of every PUBLISH the publishers wrote.
        public var sentBytes: Int
    }

    /// Scenario that ran.
    public var scenario: LoadScenario
    /// QoS used.
    public var qos: Int
    /// Publishing connections.
    public var publishers: Int
    /// Subscribing connections.
    public var subscribers: Int
    /// Payload size in bytes.
    public var payloadSize: Int
    /// Target total rate in fixed-rate mode.
    public var targetRate: Double?
    /// How the publishers shared the rate in fixed-rate mode.
    public var pacing: LoadGenConfig.Pacing?
    /// Messages the publishers sent.
    public var published: Int
    /// QoS 1/2 messages the broker acknowledged (PUBACK / PUBCOMP); equals ``published`` at QoS 0.
    public var acknowledged: Int
    /// Deliveries the subscribers should have received (each message times the subscribers it matches).
    public var expectedDeliveries: Int
    /// PUBLISH packets the subscribers received, duplicates included.
    public var delivered: Int
    /// Expected deliveries never received.
    public var lost: Int
    /// Deliveries of a message a subscriber had already received.
    public var duplicates: Int
    /// First deliveries that arrived after a later message of the same publisher.
    public var outOfOrder: Int
    /// Seconds from the first send to the last reception.
    public var elapsedSeconds: Double
    /// Seconds the publishers spent sending (first send to last acknowledgement).
    public var publishSeconds: Double
    /// ``delivered`` / ``elapsedSeconds``.
    public var deliveredPerSecond: Double
    /// ``published`` / ``publishSeconds``.
    public var publishedPerSecond: Double
    /// Latency distribution (fixed-rate mode only).
    public var latency: LatencySummary?
    /// Idle-mode figures.
    public var idle: Idle?
    /// The broker's CPU time and system calls during a publish/subscribe run, when its process id was given.
    public var brokerUsage: ProcessUsage?
    /// The generator's own CPU time and system calls during a publish/subscribe run. A generator near 100% busy
    /// (of its threads' cores) bounds the throughput it can measure: the broker's figure is then a lower bound.
    public var generatorUsage: ProcessUsage?
    /// True when publishers or the drain phase hit their time limit (missing messages are then counted as lost).
    public var timedOut: Bool
    /// The MQTT protocol level the connections spoke: 4 (3.1.1) or 5.
    public var protocolLevel: Int = 4
    /// PUBLISH sizes on the wire (publish/subscribe runs).
    public var publishWireSize: PublishWireSize?

    /// The protocol as people name it: "3.1.1" or "5".
    public var protocolName: String { protocolLevel == 5 ? "5" : "3.1.1" }

    /// "bytes on the wire per PUBLISH: N (topic alias: M)" for a publish/subscribe run (the alias part with topic
    /// aliases only), with the average over every PUBLISH sent; nil for idle runs.
    public var wireSizeLine: String? {
        guard let size = publishWireSize else { return nil }
        var line = "bytes on the wire per PUBLISH: \(size.withTopic)"
        if let alias = size.withAlias { line += " (topic alias: \(alias))" }
        if published > 0 {
            line += ", \(format(Double(size.sentBytes) / Double(published), 1)) on average over \(published) sent"
        }
        return line
    }

    /// One human-readable line.
    public var tableLine: String {
        if let idle {
            var line = "idle    mqtt=\(protocolName) conns=\(idle.connections) connect=\(format(idle.connectSeconds, 3))s "
                + "rate=\(format(idle.connectsPerSecond, 0))/s"
            if let before = idle.brokerRSSBeforeKiB, let after = idle.brokerRSSAfterKiB {
                line += " rss=\(before)->\(after)KiB"
            }
            if let perConnection = idle.brokerBytesPerConnection {
                line += " mem/conn=\(format(perConnection, 0))B"
            }
            return line
        }
        var line = "\(scenario.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)) mqtt=\(protocolName) qos=\(qos) "
            + "pubs=\(publishers) subs=\(subscribers) sent=\(published) delivered=\(delivered)/\(expectedDeliveries) "
            + "lost=\(lost) dup=\(duplicates) ooo=\(outOfOrder) time=\(format(elapsedSeconds, 3))s "
            + "deliv/s=\(format(deliveredPerSecond, 0)) pub/s=\(format(publishedPerSecond, 0))"
        if let latency {
            line += " lat_us p50=\(format(latency.p50Micros, 0)) p90=\(format(latency.p90Micros, 0)) p99=\(format(latency.p99Micros, 0)) p99.9=\(format(latency.p999Micros, 0))"
                + " max=\(format(latency.maxMicros, 0))"
        }
        if let usage = brokerUsage {
            line += " broker_cpu=\(format(usage.busyFraction * 100, 0))%"
            if let perDelivery = usage.cpuMicrosPerDelivery {
                line += " cpu_us/msg=\(format(perDelivery, 2))"
                    + " (usr \(format(usage.userSeconds, 2))s sys \(format(usage.systemSeconds, 2))s)"
            }
            if let syscalls = usage.syscallsPerDelivery { line += " syscalls/msg=\(format(syscalls, 3))" }
        }
        if let usage = generatorUsage { line += " generator_cpu=\(format(usage.busyFraction * 100, 0))%" }
        if timedOut { line += " TIMEOUT" }
        return line
    }

    /// One JSON object on one line (sorted keys).
    public var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self), let text = String(data: data, encoding: .utf8) else {
            return "{}"
        }
        return text
    }

    private func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }
}
