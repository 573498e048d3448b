/// The cab view's page: one HTML document, one style sheet, one script, kept as files in `Page/`
/// and embedded in the binary at build time, so that the page always matches the API it talks to
/// and the package installs no files beside the binary. Leaflet itself comes from the system
/// (libjs-leaflet).
enum CabPage {
    static let html = String(decoding: PackageResources.index_html, as: UTF8.self)
    static let style = String(decoding: PackageResources.app_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.app_js, as: UTF8.self)
}
