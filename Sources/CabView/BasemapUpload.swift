import BlockingWork
import Foundation

/// The basemap in use, which an upload from Settings can replace while the page serves.
actor BasemapSlot {
    private(set) var basemap: Basemap?

    init(_ basemap: Basemap?) {
        self.basemap = basemap
    }

    func replace(with basemap: Basemap) {
        self.basemap = basemap
    }
}

/// An uploaded file written as it arrives, on a thread of its own (the disk blocks), never held whole
/// in memory: a farm's MBTiles runs to hundreds of megabytes.
actor UploadFile {
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-upload")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let path: String
    private var handle: FileHandle?
    private(set) var written = 0

    init(path: String) {
        self.path = path
    }

    /// The upload and what SQLite makes beside it while the upload is checked: a file in WAL mode
    /// gets a -wal and a -shm even when it is only read. None of them may outlive a refusal.
    private var files: [String] { [path, path + "-wal", path + "-shm", path + "-journal"] }

    /// Creates the file afresh, readable by its owner only, with nothing left beside it from before.
    func open() throws {
        for file in files { try? FileManager.default.removeItem(atPath: file) }
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        self.handle = handle
    }

    func write(_ bytes: [UInt8]) throws {
        try handle?.write(contentsOf: bytes)
        written += bytes.count
    }

    /// Syncs and closes it: what is renamed into place next must be on the disk.
    func finish() throws {
        try handle?.synchronize()
        try handle?.close()
        handle = nil
    }

    /// Removes the upload, and whatever SQLite made beside it, so that nothing refused stays in the
    /// state directory.
    func discard() {
        try? handle?.close()
        handle = nil
        for file in files { try? FileManager.default.removeItem(atPath: file) }
    }
}
