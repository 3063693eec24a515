import Dispatch
import Logging
import MQTTCore
import NIOCore

/// The broker side of persistence: collects records on the core's event loop, hands them to a writer thread once
/// per batch (group commit), and runs the actions that wait for durability, in order, when their batch is synced.
///
/// Confined to the core's event loop (like ``BrokerCore``), except ``writer``, which only the serial ``queue``
/// touches. At most one batch is being written at a time; records appended meanwhile form the next batch, so one
/// `fdatasync` covers everything that arrived while the previous one ran.
final class PersistenceStore {
    /// An action waiting for a batch to be durable.
    private struct Waiter {
        var batch: UInt64
        /// A logged message waiting to be routed (included in a snapshot taken before it is routed).
        var pendingMessage: StoredMessage?
        var action: () -> Void
    }

    /// A job for the writer thread.
    private enum Job: Sendable {
        case append(ByteBuffer)
        case compact(snapshot: ByteBuffer, generation: UInt64)
    }

    /// Counters for logs, tests and the report.
    struct Statistics: Sendable, Hashable {
        /// Batches written (each one `fdatasync`, or none when it had no records).
        var batches = 0
        var fsyncs = 0
        var records = 0
        var bytes = 0
        var compactions = 0
        /// The most records one batch carried.
        var largestBatch = 0
    }

    let configuration: PersistenceConfiguration
    private let eventLoop: any EventLoop
    private let logger: Logger
    private let writer: PersistenceWriter
    private let queue = DispatchQueue(label: "mqttchat.persistence.writer")
    /// The core whose state snapshots describe; set when recovery is done.
    weak var core: BrokerCore?

    private var openBatch = ByteBuffer()
    private var openRecordCount = 0
    private var openBatchNumber: UInt64 = 1
    private var writing = false
    private var submitScheduled = false
    private var waiters = CircularBuffer<Waiter>()
    private var generation: UInt64
    private var logBytes = PersistenceFileFormat.headerSize
    private var lastSnapshot: NIODeadline
    private var compactionRequested = false
    private var closePromise: EventLoopPromise<Void>?
    private var recoveryPromise: EventLoopPromise<Void>?
    private(set) var failure: PersistenceError?
    private(set) var statistics = Statistics()
    /// Persistent sessions that exist; while there are none, QoS 1/2 messages need no records.
    var persistentSessionCount = 0
    private var nextStoreID: UInt64 = 1

    /// A store writing through `writer` (returned by ``recover(configuration:eventLoop:logger:)``), whose snapshot
    /// had `generation`.
    init(configuration: PersistenceConfiguration, eventLoop: any EventLoop, logger: Logger, writer: PersistenceWriter, generation: UInt64) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.writer = writer
        self.generation = generation
        self.lastSnapshot = eventLoop.now
    }

    // MARK: Opening

    /// Locks the directory and reads the snapshot and the log on a background queue (blocking reads never run on the
    /// event loop); completes with the writer, which then holds the lock, and the recovered state. The writer
    /// reports the duration of each sync to `onSync`.
    static func recover(
        configuration: PersistenceConfiguration, eventLoop: any EventLoop, logger: Logger,
        onSync: (@Sendable (Duration) -> Void)? = nil
    ) -> EventLoopFuture<(PersistenceWriter, PersistenceRecovery.Result)> {
        let promise = eventLoop.makePromise(of: (PersistenceWriter, PersistenceRecovery.Result).self)
        let writer = PersistenceWriter(directory: configuration.directory, onSync: onSync)
        DispatchQueue(label: "mqttchat.persistence.recovery").async {
            do {
                try writer.lock()
                promise.succeed((writer, try PersistenceRecovery(writer: writer, configuration: configuration, logger: logger).run()))
            } catch {
                writer.close()
                promise.fail(error)
            }
        }
        return promise.futureResult
    }

    /// The recovered state is in the core: write it as a fresh snapshot with a new, empty log. Completes when that
    /// is durable; only then may the broker accept clients.
    func finishRecovery(highestStoreID: UInt64, persistentSessions: Int) -> EventLoopFuture<Void> {
        nextStoreID = highestStoreID + 1
        persistentSessionCount = persistentSessions
        let promise = eventLoop.makePromise(of: Void.self)
        recoveryPromise = promise
        compactionRequested = true
        waiters.append(Waiter(batch: openBatchNumber, pendingMessage: nil) { [weak self] in
            self?.recoveryPromise = nil
            promise.succeed(())
        })
        submit()
        return promise.futureResult
    }

    // MARK: Records

    /// A fresh message id.
    func makeStoreID() -> UInt64 {
        defer { nextStoreID += 1 }
        return nextStoreID
    }

    /// Adds a record to the open batch; it is written at the end of this event-loop tick (or when the batch being
    /// written is done).
    func append(_ record: PersistentRecord) {
        guard failure == nil, closePromise == nil else { return }
        PersistenceFileFormat.appendRecord(record, to: &openBatch)
        openRecordCount += 1
        scheduleSubmit()
    }

    /// Runs `action` once every record appended so far is durable: at once when nothing is pending, otherwise after
    /// the open batch is synced, in the order the actions were registered.
    func whenDurable(pendingMessage: StoredMessage? = nil, _ action: @escaping () -> Void) {
        if pendingMessage == nil, waiters.isEmpty, openRecordCount == 0, !writing {
            action()
            return
        }
        waiters.append(Waiter(batch: openBatchNumber, pendingMessage: pendingMessage, action: action))
        scheduleSubmit()
    }

    /// Runs `action` after the actions already waiting (at once when none wait), without waiting for records of its
    /// own: keeps a QoS 1 PUBLISH behind an earlier QoS 2 PUBLISH to the same client that waits for its record.
    func afterPending(_ action: @escaping () -> Void) {
        guard let last = waiters.last else {
            action()
            return
        }
        waiters.append(Waiter(batch: last.batch, pendingMessage: nil, action: action))
    }

    /// The core's clock and the wall clock now, to store message expiry as wall-clock time.
    var clock: PersistenceClock { .now(uptime: core?.now ?? eventLoop.now) }

    /// Whether actions are waiting (then even unlogged publishes queue behind them, to keep their order).
    var hasWaiters: Bool { !waiters.isEmpty }

    /// Messages logged and not routed yet (for a snapshot).
    var pendingMessages: [StoredMessage] { waiters.compactMap(\.pendingMessage) }

    private func scheduleSubmit() {
        guard !submitScheduled, !writing else { return }
        submitScheduled = true
        eventLoop.assumeIsolated().execute { [self] in
            submitScheduled = false
            submit()
        }
    }

    /// Hands the open batch (or a compaction) to the writer thread when it is idle.
    private func submit() {
        guard !writing, failure == nil else { return }
        let hasWaiter = waiters.last.map { $0.batch == openBatchNumber } ?? false
        let compact = compactionRequested || shouldCompact
        guard openRecordCount > 0 || hasWaiter || compact else { return }
        let batch = openBatchNumber
        openBatchNumber += 1
        writing = true
        let job: Job
        if compact, let core {
            // The snapshot describes the state now, which includes the open batch: its records are not written.
            compactionRequested = false
            generation += 1
            job = .compact(snapshot: BrokerStateSnapshot.make(of: core, generation: generation, pending: pendingMessages), generation: generation)
            logBytes = PersistenceFileFormat.headerSize
            lastSnapshot = eventLoop.now
        } else {
            job = .append(openBatch)
            logBytes += openBatch.readableBytes
            statistics.records += openRecordCount
            statistics.bytes += openBatch.readableBytes
            statistics.largestBatch = max(statistics.largestBatch, openRecordCount)
        }
        let synced: Bool
        if case .compact = job { synced = true } else { synced = openRecordCount > 0 }
        let isCompaction = compact && core != nil
        openBatch = ByteBuffer()
        openRecordCount = 0
        let writer = self.writer
        let store = NIOLoopBound(self, eventLoop: eventLoop)
        queue.async {
            let result: Result<Void, PersistenceError>
            do throws(PersistenceError) {
                switch job {
                case .append(let bytes): try writer.append(bytes)
                case .compact(let snapshot, let generation): try writer.compact(snapshot: snapshot, generation: generation)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            store.eventLoop.execute {
                store.value.batchWritten(batch, result: result, synced: synced, compaction: isCompaction)
            }
        }
    }

    private var shouldCompact: Bool {
        guard core != nil else { return false }
        if logBytes > configuration.compactAfterLogBytes { return true }
        if let interval = configuration.autosaveInterval, logBytes > PersistenceFileFormat.headerSize,
            eventLoop.now - lastSnapshot >= interval
        {
            return true
        }
        return false
    }

    private func batchWritten(_ batch: UInt64, result: Result<Void, PersistenceError>, synced: Bool, compaction: Bool) {
        writing = false
        if case .failure(let error) = result {
            // Nothing that waits for durability may go out now: acknowledgements stop, clients re-send after the
            // operator fixes the disk and restarts the broker.
            failure = error
            logger.critical("persistence write failed; acknowledgements of persisted messages stop", metadata: ["error": "\(error)"])
            closePromise?.succeed(())
            closePromise = nil
            recoveryPromise?.fail(error)
            recoveryPromise = nil
            return
        }
        statistics.batches += 1
        if synced { statistics.fsyncs += 1 }
        if compaction { statistics.compactions += 1 }
        while let first = waiters.first, first.batch <= batch {
            waiters.removeFirst()
            first.action()
        }
        core?.flushDirty()
        if let closePromise, waiters.isEmpty, openRecordCount == 0, !compactionRequested {
            self.closePromise = nil
            let writer = self.writer
            queue.async {
                writer.close()
                closePromise.succeed(())
            }
            return
        }
        submit()
    }

    /// Writes what is pending and a final snapshot, then closes the files. The store accepts no records afterwards.
    func close() -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        guard failure == nil else {
            let writer = self.writer
            queue.async {
                writer.close()
                promise.succeed(())
            }
            return promise.futureResult
        }
        compactionRequested = true
        closePromise = promise
        logger.info(
            "persistence closing",
            metadata: [
                "batches": "\(statistics.batches)", "fsyncs": "\(statistics.fsyncs)", "records": "\(statistics.records)",
                "largestBatch": "\(statistics.largestBatch)", "compactions": "\(statistics.compactions)",
            ])
        if !writing { submit() }
        return promise.futureResult
    }
}
