/// The technical message types the gateway sends or reads, and the payload each carries.
public enum TechnicalMessageType {
    public static let capabilities = "dke:capabilities"
    public static let subscription = "dke:subscription"
    public static let feedHeaderQuery = "dke:feed_header_query"
    public static let feedMessageQuery = "dke:feed_message_query"
    public static let feedConfirm = "dke:feed_confirm"
    public static let feedDelete = "dke:feed_delete"
    public static let listEndpoints = "dke:list_endpoints"
    public static let listEndpointsUnfiltered = "dke:list_endpoints_unfiltered"
    public static let ping = "dke:ping"
    public static let gpsInfo = "gps:info"
    /// EFDI: an ISO11783_TaskData holding the device description, raw protobuf, never chunked.
    public static let deviceDescription = "iso:11783:-10:device_description:protobuf"
    /// EFDI: a TimeLog, raw protobuf, never chunked.
    public static let timeLog = "iso:11783:-10:time_log:protobuf"
    /// ISO 11783-10 TaskData from farm software: a zipped TASKDATA.XML, base64 in the payload's
    /// `Any`, split into chunks above the payload cap. The farm's fields arrive this way.
    public static let taskData = "iso:11783:-10:taskdata:zip"
}

/// `type_url`s are written in the documented prefixed form. Received ones are never relied on:
/// agrirouter 2.0 sometimes sends them empty.
public enum TypeURL {
    public static let prefix = "types.agrirouter.com/"

    public static func of(_ fullName: String) -> String { prefix + fullName }
}
