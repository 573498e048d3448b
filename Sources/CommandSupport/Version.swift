/// agrigps's version, one for both programs: `--version`, the device description EFDI sends, the
/// tile cache's User-Agent, and the package (the Makefile reads it from this line).
public enum AgrigpsVersion {
    public static let current = "0.2.0"
}
