import Logging
import NIOCore

/// Reads the snapshot and the log of a persistence directory and rebuilds the state they describe, applying the
/// damage policy (see `README.md` in this folder):
///
/// - A torn tail of the log (its last record cut or garbled by a crash during an append) is expected: the record
///   was never acknowledged. It is dropped and a warning names the file, offset, record number and byte count.
/// - Any other damage (a bad record in the middle of the log, a damaged, truncated or unknown-version snapshot, a
///   log newer than its snapshot) refuses to start with a ``PersistenceError`` naming file, offset and record,
///   unless ``PersistenceConfiguration/recoverPartial`` is set: then every record before the damage is kept, the
///   damaged file is moved aside (`NAME.damaged-SECONDS`) and an error is logged with what was discarded.
///
/// Runs on the persistence queue (blocking reads), before the broker binds its listeners.
struct PersistenceRecovery {
    /// What recovery produced.
    struct Result: Sendable {
        var state: PersistentState
        /// The generation of the snapshot read (0 when there was none).
        var generation: UInt64
        var snapshotRecords = 0
        var logRecords = 0
        /// Bytes of a torn log tail that were dropped.
        var tornTailBytes = 0
        /// The oldest format version among the files read (the current one when there were none). The compaction
        /// that follows recovery rewrites older files in the current version.
        var formatVersion = PersistenceFileFormat.version
        /// How long reading and replaying took.
        var duration: Duration = .zero
    }

    let writer: PersistenceWriter
    let configuration: PersistenceConfiguration
    let logger: Logger

    func run() throws(PersistenceError) -> Result {
        let started = ContinuousClock.now
        var state = PersistentState()
        var result = Result(state: state, generation: 0)
        if let snapshot = try readSnapshot() {
            result.generation = snapshot.generation
            result.formatVersion = min(result.formatVersion, snapshot.version)
            result.snapshotRecords = snapshot.records.count
            for record in snapshot.records { state.apply(record) }
        }
        if let log = try readLog(snapshotGeneration: result.generation, result: &result) {
            result.logRecords = log.count
            for record in log { state.apply(record) }
        }
        state.pruneMessages()
        if result.formatVersion < PersistenceFileFormat.version {
            logger.notice(
                "persistence: files of an older format version are read and rewritten in the current one",
                metadata: ["from": "\(result.formatVersion)", "to": "\(PersistenceFileFormat.version)"])
        }
        if state.inconsistencies > 0 {
            logger.warning(
                "persistence: records referring to unknown sessions, messages or packet ids were skipped",
                metadata: ["count": "\(state.inconsistencies)"])
        }
        result.state = state
        result.duration = ContinuousClock.now - started
        return result
    }

    private func readSnapshot() throws(PersistenceError) -> PersistenceFileFormat.ReadResult? {
        let path = writer.snapshotPath
        guard let bytes = try writer.readFile(path) else { return nil }
        var read: PersistenceFileFormat.ReadResult
        do {
            read = try PersistenceFileFormat.read(bytes, path: path, kind: .snapshot)
        } catch {
            guard configuration.recoverPartial else { throw error }
            let aside = try writer.moveAside(path)
            logger.error("persistence: unreadable snapshot moved aside, its state is lost", metadata: ["error": "\(error)", "movedTo": "\(aside)"])
            return nil
        }
        if read.damage == nil {
            // A complete snapshot ends with its end record, counting the records before it.
            if case .snapshotEnd(let count) = read.records.last, count == UInt64(read.records.count - 1) {
                read.records.removeLast()
            } else {
                read.damage = PersistenceDamage(
                    offset: read.validLength, recordNumber: read.records.count + 1, reason: .missingEnd(recordsRead: read.records.count),
                    discardedBytes: 0)
            }
        }
        if let damage = read.damage {
            guard configuration.recoverPartial else { throw .damagedSnapshot(path: path, damage: damage) }
            let aside = try writer.moveAside(path)
            logger.error(
                "persistence: damaged snapshot, recovering the records before the damage",
                metadata: ["file": "\(path)", "damage": "\(damage)", "recordsKept": "\(read.records.count)", "movedTo": "\(aside)"])
        }
        return read
    }

    private func readLog(snapshotGeneration: UInt64, result: inout Result) throws(PersistenceError) -> [PersistentRecord]? {
        let path = writer.logPath
        guard let bytes = try writer.readFile(path) else { return nil }
        let read: PersistenceFileFormat.ReadResult
        do {
            read = try PersistenceFileFormat.read(bytes, path: path, kind: .log)
        } catch {
            guard configuration.recoverPartial else { throw error }
            let aside = try writer.moveAside(path)
            logger.error("persistence: unreadable log moved aside, its records are lost", metadata: ["error": "\(error)", "movedTo": "\(aside)"])
            return nil
        }
        result.formatVersion = min(result.formatVersion, read.version)
        if read.generation < snapshotGeneration {
            // A crash between writing a new snapshot and starting its log: the snapshot already holds this log.
            logger.notice("persistence: log predates the snapshot and is ignored", metadata: ["log": "\(read.generation)", "snapshot": "\(snapshotGeneration)"])
            return nil
        }
        if read.generation > snapshotGeneration {
            let error = PersistenceError.generationMismatch(logPath: path, logGeneration: read.generation, snapshotGeneration: snapshotGeneration)
            guard configuration.recoverPartial else { throw error }
            logger.error("persistence: replaying a log onto an older snapshot", metadata: ["error": "\(error)"])
        }
        if let damage = read.damage {
            if read.damageIsTornTail {
                result.tornTailBytes = damage.discardedBytes
                logger.warning(
                    "persistence: torn tail of the log dropped (a crash during an append; that record was never acknowledged)",
                    metadata: [
                        "file": "\(path)", "offset": "\(damage.offset)", "record": "\(damage.recordNumber)",
                        "bytes": "\(damage.discardedBytes)", "reason": "\(damage.reason)",
                    ])
            } else {
                guard configuration.recoverPartial else { throw .damagedLog(path: path, damage: damage) }
                let aside = try writer.moveAside(path)
                logger.error(
                    "persistence: damaged log, recovering the records before the damage",
                    metadata: ["file": "\(path)", "damage": "\(damage)", "recordsKept": "\(read.records.count)", "movedTo": "\(aside)"])
            }
        }
        return read.records
    }
}
