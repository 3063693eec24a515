#if !FUZZING
import Foundation

/// Without the fuzzer: replays corpus files (or every file in the directories given) through the same oracle,
/// so that CI can re-check the committed corpus and crash reproducers with a plain `swift build`.
@main
struct CorpusReplayer {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard !arguments.isEmpty else {
            FileHandle.standardError.write(Data("usage: FuzzPacketDecoder FILE_OR_DIRECTORY...\n".utf8))
            exit(2)
        }
        var count = 0
        for path in arguments {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("cannot read \(file)\n".utf8))
                    exit(1)
                }
                DecoderOracle.check(Array(data))
                count += 1
            }
        }
        print("replayed \(count) inputs, all passed")
    }

    /// The regular files under `path` (sorted), or `path` itself when it is a file.
    private static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return [path]
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { "\(path)/\($0)" }.filter { file in
            var isDir: ObjCBool = false
            return FileManager.default.fileExists(atPath: file, isDirectory: &isDir) && !isDir.boolValue
        }
    }
}
#endif
