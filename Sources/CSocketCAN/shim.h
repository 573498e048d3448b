// Linux's SocketCAN headers (linux-libc-dev): the raw CAN socket's address, frame and options, which
// Glibc's module does not bring.
#ifndef AGRIGPS_CSOCKETCAN_SHIM_H
#define AGRIGPS_CSOCKETCAN_SHIM_H

#include <sys/socket.h>
#include <net/if.h>
#include <linux/can.h>
#include <linux/can/raw.h>

#endif
