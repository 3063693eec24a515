/// Splits the text of a configuration, password or ACL file into lines.
enum ConfigText {
    /// The lines of `text`, numbered from 1 by their position, ending at `\n` or `\r\n`.
    ///
    /// A Swift `String` treats `\r\n` as one `Character`, so splitting at `"\n"` alone would leave a file written on
    /// Windows as one long line; mosquitto reads such files, so we must too.
    static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    }
}
