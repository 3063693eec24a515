/// Why the broker's persistence could not be opened, recovered or written. Every case that concerns a file names
/// it, and damage inside a file says where (byte offset, record number) and what was wrong.
public enum PersistenceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The persistence directory could not be created or opened.
    case directoryUnavailable(path: String, reason: String)
    /// Another process holds the lock file of the directory (two brokers must never share one).
    case directoryLocked(path: String)
    /// A file could not be read, written, synced or renamed; `operation` names the system call.
    case io(path: String, operation: String, errno: Int32)
    /// The file does not start with the persistence magic bytes: it is not a persistence file.
    case badMagic(path: String)
    /// The file was written by a format version this broker does not read.
    case unsupportedVersion(path: String, found: UInt16, supported: UInt16)
    /// The file's header says it is a different kind of file (a snapshot where a log was expected, or the reverse).
    case wrongFileKind(path: String, expected: String)
    /// The file is shorter than its header, or the header's checksum does not match.
    case damagedHeader(path: String, reason: String)
    /// A record in the middle of the log (not its last record) is damaged: the records before it were read, the
    /// ones after it are lost. Refused unless `persistence_recover_partial true`.
    case damagedLog(path: String, damage: PersistenceDamage)
    /// The snapshot is damaged or incomplete. Snapshots are written to a new file, synced and renamed, so this
    /// never happens after a crash; it means the file was altered. Refused unless `persistence_recover_partial true`.
    case damagedSnapshot(path: String, damage: PersistenceDamage)
    /// The log was started for a snapshot generation newer than the snapshot found: the snapshot belongs to an
    /// older state and replaying the log onto it would be wrong.
    case generationMismatch(logPath: String, logGeneration: UInt64, snapshotGeneration: UInt64)

    public var description: String {
        switch self {
        case .directoryUnavailable(let path, let reason):
            return "persistence directory \(path) cannot be used: \(reason)"
        case .directoryLocked(let path):
            return "persistence directory \(path) is locked by another broker process"
        case .io(let path, let operation, let errno):
            return "\(operation) failed on \(path): errno \(errno)"
        case .badMagic(let path):
            return "\(path): not an mqttchat persistence file (bad magic bytes at offset 0)"
        case .unsupportedVersion(let path, let found, let supported):
            return "\(path): format version \(found) is not supported (this broker reads versions 1 to \(supported))"
        case .wrongFileKind(let path, let expected):
            return "\(path): expected a \(expected) file"
        case .damagedHeader(let path, let reason):
            return "\(path): damaged header: \(reason)"
        case .damagedLog(let path, let damage):
            return "\(path): damaged log: \(damage); start with persistence_recover_partial true to keep the "
                + "\(damage.recordNumber - 1) records before it and move the file aside"
        case .damagedSnapshot(let path, let damage):
            return "\(path): damaged snapshot: \(damage); start with persistence_recover_partial true to keep the "
                + "\(max(0, damage.recordNumber - 1)) records before it and move the file aside"
        case .generationMismatch(let logPath, let logGeneration, let snapshotGeneration):
            return "\(logPath): log generation \(logGeneration) does not follow snapshot generation \(snapshotGeneration)"
        }
    }
}

/// Where a persistence file is damaged and how.
public struct PersistenceDamage: Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the record.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// The file ends inside the record: `needed` bytes were announced, `available` remain.
        case truncated(needed: Int, available: Int)
        /// The record's checksum does not match its bytes.
        case checksumMismatch(stored: UInt32, computed: UInt32)
        /// The length prefix is zero or larger than any record can be.
        case invalidLength(UInt32)
        /// The bytes have a valid checksum but do not decode as a record (unknown type, bad field).
        case undecodable(String)
        /// A snapshot ends without its end record, or with a record count that does not match.
        case missingEnd(recordsRead: Int)

        public var description: String {
            switch self {
            case .truncated(let needed, let available): return "truncated record (\(needed) bytes needed, \(available) present)"
            case .checksumMismatch(let stored, let computed):
                return "checksum mismatch (stored 0x\(String(stored, radix: 16)), computed 0x\(String(computed, radix: 16)))"
            case .invalidLength(let length): return "invalid record length \(length)"
            case .undecodable(let reason): return "undecodable record: \(reason)"
            case .missingEnd(let read): return "no end record after \(read) records (file cut short)"
            }
        }
    }

    /// Byte offset of the damaged record's length prefix.
    public var offset: Int
    /// 1-based number of the damaged record in the file.
    public var recordNumber: Int
    /// What was wrong.
    public var reason: Reason
    /// Bytes from `offset` to the end of the file (what is discarded when recovering).
    public var discardedBytes: Int

    public var description: String {
        "record \(recordNumber) at offset \(offset): \(reason) (\(discardedBytes) bytes from there to the end of the file)"
    }
}
