import Foundation

/// Monotonic seconds; unaffected by the system clock being set (boxes without an RTC boot at 1970).
public func uptime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
