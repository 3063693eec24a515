extension Array {
    /// Empties the array and keeps its storage, for the lists the broker reuses on every message.
    ///
    /// `removeAll(keepingCapacity: true)` goes through the generic `replaceSubrange` and a generic destroy of the
    /// range, far too much for a list of one or two actions, and the broker empties one after every
    /// acknowledgement. Removing from the end costs a few instructions per element.
    mutating func removeAllKeepingStorage() {
        while !isEmpty {
            removeLast()
        }
    }
}
