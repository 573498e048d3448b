// Linux's SocketCAN headers (linux-libc-dev): the raw CAN socket's address, frame and options, which
// Glibc's module does not bring.
#ifndef AGRIGPS_CSOCKETCAN_SHIM_H
#define AGRIGPS_CSOCKETCAN_SHIM_H

#include <sys/socket.h>
#include <net/if.h>
#include <linux/can.h>
#include <linux/can/raw.h>

// SOL_CAN_RAW is SOL_CAN_BASE + CAN_RAW, a macro of macros Swift does not import.
static const int agrigps_sol_can_raw = SOL_CAN_RAW;

#endif
