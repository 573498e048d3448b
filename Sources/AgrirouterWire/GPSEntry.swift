/// gps:info's one position, by its short name.
public typealias GPSEntry = Agrirouter_Technicalmessagetype_GPSList.GPSEntry
