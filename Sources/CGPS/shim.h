// Thin shim over gpsd's libgps (API 11, gpsd 3.22) for what Swift cannot import directly:
// the variadic gps_send, errno captured next to the call that set it, a decode that bypasses
// libgps' own reading, and status constants whose names differ between gpsd releases.
#ifndef AGRIGPS_CGPS_SHIM_H
#define AGRIGPS_CGPS_SHIM_H

#include <stddef.h>
#include <errno.h>
#include <gps.h>

#if GPSD_API_MAJOR_VERSION < 7
#error "agrigps needs libgps API 7 or later (gpsd 3.18+) for the three-argument gps_read"
#endif

// TPV status values. Identical in every gpsd release, but renamed in API 12+ (STATUS_GPS, ...),
// so we carry our own names.
enum {
    CGPS_STATUS_UNKNOWN = 0,
    CGPS_STATUS_GPS = 1,
    CGPS_STATUS_DGPS = 2,
    CGPS_STATUS_RTK_FIXED = 3,
    CGPS_STATUS_RTK_FLOAT = 4,
    CGPS_STATUS_DR = 5,
    CGPS_STATUS_GNSS_DR = 6,
    CGPS_STATUS_TIME = 7,
    CGPS_STATUS_SIM = 8,
    CGPS_STATUS_PPS = 9,
};

// gps_open reports its NL_* failure code through errno; read it here, before Swift code can clobber it.
static inline int cgps_open(const char *host, const char *port, struct gps_data_t *gps, int *error_code) {
    errno = 0;
    int rc = gps_open(host, port, gps);
    *error_code = (rc == 0) ? 0 : errno;
    return rc;
}

static inline int cgps_watch_json(struct gps_data_t *gps) {
    return gps_stream(gps, WATCH_ENABLE | WATCH_JSON, NULL);
}

static inline int cgps_send(struct gps_data_t *gps, const char *command) {
    return gps_send(gps, "%s", command);
}

// Decodes one line we framed ourselves (libgps 3.22's own reading spins on a partial line).
// Only for lines GPSDJSON.isSafeForLibgps accepts: gps_unpack loops for ever on a line whose
// parse fails before a later "class": key (fixed upstream after 3.22). libgps ORs some message
// bits into `set` and assigns others, so it is cleared first.
static inline int cgps_unpack(struct gps_data_t *gps, char *line) {
    gps->set = 0;
    return gps_unpack(line, gps);
}

#endif
