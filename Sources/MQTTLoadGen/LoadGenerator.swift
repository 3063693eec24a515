import MQTTCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Runs one load generator scenario against a broker over real TCP connections (MQTT on TCP or over WebSockets).
///
/// Never hangs: connecting is bounded by ``LoadGenConfig/connectTimeout``, publishing by
/// ``LoadGenConfig/publishTimeout`` (plus ``LoadGenConfig/duration``), and waiting for missing messages by
/// ``LoadGenConfig/drainTimeout``; whatever has not arrived by then is reported as lost.
public enum LoadGenerator {
    /// Runs `config`; `progress`, if given, is called about once a second from another task.
    public static func run(
        _ config: LoadGenConfig, progress: (@Sendable (LoadProgress) -> Void)? = nil
    ) async throws(LoadGenError) -> LoadGenResult {
        let config = try config.validated()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: config.threads)
        let counters = LiveCounters()
        let reporter = progress.map { report in
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    if !Task.isCancelled { report(counters.progress) }
                }
            }
        }
        let outcome: Result<LoadGenResult, LoadGenError>
        do throws(LoadGenError) {
            let session = RunSession(config: config, group: group, counters: counters)
            outcome = .success(
                config.scenario == .idle ? try await session.runIdle() : try await session.runPublishSubscribe())
        } catch {
            outcome = .failure(error)
        }
        reporter?.cancel()
        try? await group.shutdownGracefully()
        return try outcome.get()
    }
}

/// The connections and figures of one run.
private struct RunSession {
    let config: LoadGenConfig
    let group: MultiThreadedEventLoopGroup
    let counters: LiveCounters
    /// Random per-run tag in topics and client identifiers: always 8 hex digits, so that topics, and the PUBLISH
    /// sizes on the wire that runs compare, have the same length in every run.
    let runID: String = {
        let digits = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }()
    var loop: any EventLoop { group.any() }

    private func bootstrap(_ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> ClientBootstrap {
        ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .connectTimeout(.milliseconds(Int64(config.connectTimeout * 1000)))
            .channelInitializer(initializer)
    }

    /// Opens one connection with the MQTT handler `makeHandler` builds on the channel's loop: straight on TCP (the
    /// handler is the whole pipeline), or behind a WebSocket upgrade, after which the connection counts as open.
    private func connect<Handler: ChannelHandler & SendableMetatype>(
        _ makeHandler: @escaping @Sendable () throws -> Handler
    ) -> EventLoopFuture<(any Channel, NIOLoopBound<Handler>)> {
        let opened: EventLoopFuture<any Channel>
        switch config.transport {
        case .tcp:
            opened = bootstrap { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(makeHandler()) }
            }.connect(host: config.host, port: config.port)
        case .ws:
            opened = connectWebSocket(makeHandler)
        }
        return opened.flatMap { channel in
            channel.eventLoop.submit {
                let handler = try channel.pipeline.syncOperations.handler(type: Handler.self)
                return (channel, NIOLoopBound(handler, eventLoop: channel.eventLoop))
            }
        }
    }

    /// A connection whose WebSocket upgrade is done (bounded by the connect timeout), the MQTT handler in place.
    private func connectWebSocket(
        _ makeHandler: @escaping @Sendable () throws -> any ChannelHandler
    ) -> EventLoopFuture<any Channel> {
        let config = config
        let upgraded = loop.makePromise(of: Void.self)
        let timeout = loop.scheduleTask(in: .nanoseconds(Int64(config.connectTimeout * 1e9))) {
            upgraded.fail(LoadGenError.timedOut(phase: "WebSocket upgrade", seconds: config.connectTimeout))
        }
        upgraded.futureResult.whenComplete { _ in timeout.cancel() }
        let connected = bootstrap { channel in
            WebSocketTransport.configure(
                channel, host: config.host, port: config.port, path: config.webSocketPath, upgraded: upgraded,
                makeHandler: makeHandler)
        }
        .connect(host: config.host, port: config.port)
        // No channel, no upgrade: complete the promise (NIO reports promises dropped uncompleted).
        connected.whenFailure { upgraded.fail($0) }
        return connected.flatMap { channel in
            upgraded.futureResult.map { channel }.flatMapError { error in
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// The opened connections. A connection that its handler already closed (its CONNACK was a refusal, say) has
    /// no handler left to find by the time it is opened: then the reason its `ready` promise failed with is the
    /// error, not the missing handler.
    private func awaitConnected<T: Sendable>(
        _ futures: [EventLoopFuture<T>], ready: [EventLoopFuture<Void>] = []
    ) async throws(LoadGenError) -> [T] {
        var values: [T] = []
        for future in futures {
            do {
                values.append(try await future.get())
            } catch let error as LoadGenError {
                throw error
            } catch {
                if let cause = await firstFailure(of: ready) { throw cause }
                throw .connectFailed(host: config.host, port: config.port, reason: "\(error)")
            }
        }
        return values
    }

    /// The first `LoadGenError` among the futures that have failed within the connect timeout.
    private func firstFailure(of futures: [EventLoopFuture<Void>]) async -> LoadGenError? {
        let first = NIOLockedValueBox<LoadGenError?>(nil)
        for future in futures {
            future.whenFailure { error in
                guard let error = error as? LoadGenError else { return }
                first.withLockedValue { if $0 == nil { $0 = error } }
            }
        }
        let deadline = ContinuousClock.now + .nanoseconds(Int64(config.connectTimeout * 1e9))
        while ContinuousClock.now < deadline {
            if let error = first.withLockedValue({ $0 }) { return error }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return first.withLockedValue { $0 }
    }

    private func waitReady(_ futures: [EventLoopFuture<Void>], phase: String) async throws(LoadGenError) {
        let seconds = config.connectTimeout
        guard try await FutureWaiting.allSucceed(futures, timeout: .nanoseconds(Int64(seconds * 1e9)), on: loop) else {
            throw .timedOut(phase: phase, seconds: seconds)
        }
    }

    /// Completes every promise of the run (completing one twice is a no-op): NIO reports promises that are
    /// dropped uncompleted, which happens when a connect fails before its handler exists.
    private func settle(_ promises: [EventLoopPromise<Void>]) {
        for promise in promises { promise.fail(LoadGenError.closedDuringHandshake) }
    }

    private func closeAll(_ channels: [any Channel]) async {
        let closes = channels.map { channel in
            channel.writeAndFlush(WirePackets.disconnect).flatMap { channel.close() }
        }
        _ = try? await FutureWaiting.allSucceed(
            closes.map { $0.flatMapErrorThrowing { _ in } }, timeout: .seconds(2), on: loop)
    }

    // MARK: Publish / subscribe scenarios

    private func topic(of publisher: Int) -> String {
        switch config.scenario {
        case .fanout, .idle: return "\(config.topicPrefix)/\(runID)/fanout"
        case .fanin: return "\(config.topicPrefix)/\(runID)/in/\(publisher)"
        case .pairs: return "\(config.topicPrefix)/\(runID)/pair/\(publisher)"
        }
    }

    private func filter(of subscriber: Int) -> String {
        switch config.scenario {
        case .fanout, .idle: return "\(config.topicPrefix)/\(runID)/fanout"
        case .fanin: return "\(config.topicPrefix)/\(runID)/in/+"
        case .pairs: return "\(config.topicPrefix)/\(runID)/pair/\(subscriber)"
        }
    }

    func runPublishSubscribe() async throws(LoadGenError) -> LoadGenResult {
        let config = config
        let counters = counters
        var channels: [any Channel] = []
        var promises: [EventLoopPromise<Void>] = []
        defer { settle(promises) }
        do throws(LoadGenError) {
            // Subscribers first, so that no message is published before every subscription is in place.
            var subscriberReady: [EventLoopFuture<Void>] = []
            var subscriberDrained: [EventLoopFuture<Void>] = []
            var subscriberConnects: [EventLoopFuture<(any Channel, NIOLoopBound<SubscriberHandler>)>] = []
            for index in 0..<config.subscribers {
                let ready = loop.makePromise(of: Void.self)
                let drained = loop.makePromise(of: Void.self)
                promises += [ready, drained]
                subscriberReady.append(ready.futureResult)
                subscriberDrained.append(drained.futureResult)
                let plan = SubscriberPlan(
                    filter: filter(of: index), qos: config.qos, publisherCount: config.publishers,
                    recordsLatency: config.recordsLatency, clientID: "bench-\(runID)-s\(index)",
                    keepAliveSeconds: config.keepAliveSeconds, login: config.login, decodePath: config.decodePath,
                    protocolVersion: config.protocolVersion)
                subscriberConnects.append(
                    connect { try SubscriberHandler(plan: plan, counters: counters, ready: ready, drained: drained) })
            }
            let subscribers = try await awaitConnected(subscriberConnects, ready: subscriberReady)
            channels += subscribers.map(\.0)
            try await waitReady(subscriberReady, phase: "subscribing")

            var publisherReady: [EventLoopFuture<Void>] = []
            var publisherDone: [EventLoopFuture<Void>] = []
            var publisherConnects: [EventLoopFuture<(any Channel, NIOLoopBound<PublisherHandler>)>] = []
            let perPublisherRate = config.rate.map { $0 / Double(config.publishers) }
            for index in 0..<config.publishers {
                let ready = loop.makePromise(of: Void.self)
                let done = loop.makePromise(of: Void.self)
                promises += [ready, done]
                publisherReady.append(ready.futureResult)
                publisherDone.append(done.futureResult)
                let plan = PublisherPlan(
                    topic: topic(of: index), qos: config.qos, payloadSize: config.payloadSize,
                    publisherIndex: UInt32(index), messageLimit: config.duration == nil ? config.messagesPerPublisher : nil,
                    rate: perPublisherRate,
                    phaseNanos: config.phaseNanos(ofPublisher: index),
                    inflight: config.inflight, clientID: "bench-\(runID)-p\(index)",
                    keepAliveSeconds: config.keepAliveSeconds, login: config.login, decodePath: config.decodePath,
                    protocolVersion: config.protocolVersion, topicAlias: config.topicAlias)
                publisherConnects.append(
                    connect { try PublisherHandler(plan: plan, counters: counters, ready: ready, done: done) })
            }
            let publishers = try await awaitConnected(publisherConnects, ready: publisherReady)
            channels += publishers.map(\.0)
            try await waitReady(publisherReady, phase: "connecting publishers")

            // Publish (the broker's CPU time and system calls are sampled around publishing and draining).
            let usageBefore = try sampleBroker()
            let generatorBefore = try? ProcessUsageSample.read(pid: getpid())
            let usageStart = NIODeadline.now()
            let sendDeadline = config.duration.map { NIODeadline.now() + .nanoseconds(Int64($0 * 1e9)) }
            for (_, handler) in publishers {
                handler.eventLoop.execute { handler.value.start(deadline: sendDeadline) }
            }
            let publishLimit = (config.duration ?? 0) + config.publishTimeout
            let publishersFinished = try await FutureWaiting.allSucceed(
                publisherDone, timeout: .nanoseconds(Int64(publishLimit * 1e9)), on: loop)
            var publisherSnapshots: [PublisherSnapshot] = []
            for (_, handler) in publishers {
                let future = handler.eventLoop.submit {
                    handler.value.stop()
                    return handler.value.snapshot()
                }
                publisherSnapshots.append(try await FutureWaiting.value(of: future))
            }

            // Drain: tell each subscriber how many messages it should get, then wait a bounded time.
            let sent = publisherSnapshots.map(\.sent)
            var expectations: [[Int]] = []
            for (index, (_, handler)) in subscribers.enumerated() {
                let expected = sent.indices.map { config.scenario.delivers(publisher: $0, to: index) ? sent[$0] : 0 }
                expectations.append(expected)
                let total = expected.reduce(0, +)
                handler.eventLoop.execute { handler.value.expect(total) }
            }
            let drainedAll = try await FutureWaiting.allSucceed(
                subscriberDrained, timeout: .nanoseconds(Int64(config.drainTimeout * 1e9)), on: loop)
            let usageAfter = try sampleBroker()
            let generatorAfter = try? ProcessUsageSample.read(pid: getpid())
            let usageSeconds = Double((NIODeadline.now() - usageStart).nanoseconds) / 1e9
            var subscriberSnapshots: [SubscriberSnapshot] = []
            for (_, handler) in subscribers {
                let future = handler.eventLoop.submit { handler.value.snapshot() }
                subscriberSnapshots.append(try await FutureWaiting.value(of: future))
            }
            await closeAll(channels)
            // A connection that hit a protocol error (or a broker's DISCONNECT) makes the run an error, not losses.
            if let failure = counters.failure { throw failure }
            var result = summarize(
                publishers: publisherSnapshots, subscribers: subscriberSnapshots, expectations: expectations,
                timedOut: !publishersFinished || !drainedAll)
            if let usageBefore, let usageAfter {
                result.brokerUsage = LoadGenResult.ProcessUsage(
                    from: usageBefore, to: usageAfter, wallSeconds: usageSeconds, delivered: result.delivered)
            }
            if let generatorBefore, let generatorAfter {
                result.generatorUsage = LoadGenResult.ProcessUsage(
                    from: generatorBefore, to: generatorAfter, wallSeconds: usageSeconds, delivered: result.delivered)
            }
            return result
        } catch {
            await closeAll(channels)
            throw error
        }
    }

    /// The broker's CPU time and system calls now, when its process id was given.
    private func sampleBroker() throws(LoadGenError) -> ProcessUsageSample? {
        guard let pid = config.brokerPID else { return nil }
        return try ProcessUsageSample.read(pid: pid)
    }

    private func summarize(
        publishers: [PublisherSnapshot], subscribers: [SubscriberSnapshot], expectations: [[Int]], timedOut: Bool
    ) -> LoadGenResult {
        let firstSend = publishers.map(\.firstSendNanos).filter { $0 > 0 }.min() ?? 0
        let lastPublisherActivity = publishers.map(\.lastActivityNanos).max() ?? 0
        let lastReceive = subscribers.map(\.lastReceiveNanos).max() ?? 0
        let publishSeconds = firstSend > 0 ? Double(lastPublisherActivity &- firstSend) / 1e9 : 0
        let elapsedSeconds = firstSend > 0 && lastReceive > firstSend ? Double(lastReceive - firstSend) / 1e9 : 0
        var delivered = 0
        var lost = 0
        var duplicates = 0
        var outOfOrder = 0
        var latencies: [UInt64] = []
        for (subscriber, expected) in zip(subscribers, expectations) {
            delivered += subscriber.accounting.delivered
            lost += subscriber.accounting.lost(expected: expected)
            duplicates += subscriber.accounting.duplicates
            outOfOrder += subscriber.accounting.outOfOrder
            latencies += subscriber.latencies
        }
        let published = publishers.reduce(0) { $0 + $1.sent }
        let wireSize = publishers.first.map { first in
            LoadGenResult.PublishWireSize(
                withTopic: first.withTopicSize, withAlias: first.withAliasSize,
                sentBytes: publishers.reduce(0) { $0 + $1.publishBytes })
        }
        return LoadGenResult(
            scenario: config.scenario, qos: Int(config.qos.rawValue), publishers: config.publishers,
            subscribers: config.subscribers, payloadSize: config.payloadSize, targetRate: config.rate,
            pacing: config.rate == nil ? nil : config.pacing,
            published: published, acknowledged: publishers.reduce(0) { $0 + $1.acknowledged },
            expectedDeliveries: expectations.reduce(0) { $0 + $1.reduce(0, +) }, delivered: delivered, lost: lost,
            duplicates: duplicates, outOfOrder: outOfOrder, elapsedSeconds: elapsedSeconds,
            publishSeconds: publishSeconds,
            deliveredPerSecond: elapsedSeconds > 0 ? Double(delivered) / elapsedSeconds : 0,
            publishedPerSecond: publishSeconds > 0 ? Double(published) / publishSeconds : 0,
            latency: LatencySummary(nanoseconds: latencies), idle: nil, timedOut: timedOut,
            protocolLevel: Int(config.protocolVersion.rawValue), publishWireSize: wireSize)
    }

    // MARK: Idle connections

    func runIdle() async throws(LoadGenError) -> LoadGenResult {
        let config = config
        let counters = counters
        let connectPacket = try WirePackets.connect(
            clientID: "", keepAliveSeconds: config.keepAliveSeconds, login: config.login,
            protocolVersion: config.protocolVersion)
        let rssBefore = try config.brokerPID.map { pid throws(LoadGenError) in try BrokerMemory.residentKiB(pid: pid) }
        var channels: [any Channel] = []
        var promises: [EventLoopPromise<Void>] = []
        defer { settle(promises) }
        do throws(LoadGenError) {
            let start = NIODeadline.now()
            var opened = 0
            while opened < config.connections {
                let wave = min(config.connectConcurrency, config.connections - opened)
                var ready: [EventLoopFuture<Void>] = []
                var connects: [EventLoopFuture<(any Channel, NIOLoopBound<IdleHandler>)>] = []
                for _ in 0..<wave {
                    let promise = loop.makePromise(of: Void.self)
                    promises.append(promise)
                    ready.append(promise.futureResult)
                    connects.append(
                        connect {
                            IdleHandler(
                                connectPacket: connectPacket, keepAliveSeconds: config.keepAliveSeconds,
                                protocolVersion: config.protocolVersion, counters: counters, ready: promise)
                        })
                }
                channels += try await awaitConnected(connects).map(\.0)
                try await waitReady(ready, phase: "opening idle connections")
                opened += wave
            }
            let connectSeconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            var rssAfter: Int?
            if let pid = config.brokerPID {
                try? await Task.sleep(for: .milliseconds(300))  // let the broker finish per-connection setup
                rssAfter = try BrokerMemory.residentKiB(pid: pid)
            }
            if let hold = config.duration, hold > 0 { try? await Task.sleep(for: .seconds(hold)) }
            let stillOpen = channels.filter(\.isActive).count
            await closeAll(channels)
            var perConnection: Double?
            if let rssBefore, let rssAfter { perConnection = Double(rssAfter - rssBefore) * 1024 / Double(opened) }
            let idle = LoadGenResult.Idle(
                connections: stillOpen, connectSeconds: connectSeconds,
                connectsPerSecond: connectSeconds > 0 ? Double(opened) / connectSeconds : 0,
                brokerRSSBeforeKiB: rssBefore, brokerRSSAfterKiB: rssAfter, brokerBytesPerConnection: perConnection)
            return LoadGenResult(
                scenario: .idle, qos: 0, publishers: 0, subscribers: 0, payloadSize: 0, targetRate: nil, pacing: nil,
                published: 0, acknowledged: 0, expectedDeliveries: 0, delivered: 0, lost: 0, duplicates: 0,
                outOfOrder: 0, elapsedSeconds: connectSeconds, publishSeconds: 0, deliveredPerSecond: 0,
                publishedPerSecond: 0, latency: nil, idle: idle, timedOut: false,
                protocolLevel: Int(config.protocolVersion.rawValue))
        } catch {
            await closeAll(channels)
            throw error
        }
    }
}
