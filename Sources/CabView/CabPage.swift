/// The cab view's page: one HTML document, one style sheet, one script, kept as files in `Page/`
/// and embedded in the binary at build time, so that the page always matches the API it talks to
/// and the package installs no files beside the binary. Leaflet itself comes from the system
/// (libjs-leaflet).
enum CabPage {
    static let html = String(decoding: PackageResources.index_html, as: UTF8.self)
    static let style = String(decoding: PackageResources.app_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.app_js, as: UTF8.self)
    /// The page's words, one catalogue per language (`Page/lang/`); the page picks one by the
    /// browser's languages or the driver's choice in Settings.
    static let languages = [
        "en": String(decoding: PackageResources.en_json, as: UTF8.self),
        "de": String(decoding: PackageResources.de_json, as: UTF8.self),
    ]
}
