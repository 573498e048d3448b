// libmosquitto, the MQTT client library. It has no variadic functions and no macros Swift needs, so
// Swift calls it directly; this header only pins the version whose behaviour agrigps relies on.
#ifndef AGRIGPS_CMOSQUITTO_SHIM_H
#define AGRIGPS_CMOSQUITTO_SHIM_H

#include <mosquitto.h>

#if LIBMOSQUITTO_MAJOR < 2
#error "agrigps needs libmosquitto 2.0 or later (Debian 12: libmosquitto-dev)"
#endif

#endif
