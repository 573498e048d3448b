#!/usr/bin/env python3
"""Plays a candump log onto a CAN interface, as can-utils' canplayer does, for the field rig's guest
(which has Python but no can-utils). Logs with time stamps (candump -l) are played at their pace, with
the receiver's times (PGN 129029's and 126992's) moved to now, round and round with --loop; logs
without (candump's older "<0xID> [n] bytes" form) one frame every --interval seconds.

    can_player.py can1 logfile.log --loop
"""
import argparse
import re
import socket
import struct
import sys
import threading
import time

CAN_EFF_FLAG = 0x80000000
POSITION_DATA = 129029  # GNSS position data: a fast packet, its date and time in the first two frames
SYSTEM_TIME = 126992
TICKS_PER_DAY = 864_000_000  # NMEA 2000 times of day are in 0.0001 s
STAMPED = re.compile(r"^\((\d+\.\d+)\)\s+\S+\s+([0-9A-Fa-f]{1,8})#([0-9A-Fa-f]*)\s*$")
UNSTAMPED = re.compile(r"^<0x([0-9A-Fa-f]{1,8})>\s+\[(\d)\]((?:\s+[0-9A-Fa-f]{2})*)\s*$")


def read_log(path):
    """[(stamp or None, identifier, data)] of the log's extended frames; anything else is left out."""
    frames = []
    with open(path, encoding="ascii", errors="replace") as handle:
        for line in handle:
            match = STAMPED.match(line)
            if match:
                frames.append((float(match.group(1)), int(match.group(2), 16), bytes.fromhex(match.group(3))))
                continue
            match = UNSTAMPED.match(line)
            if match:
                data = bytes.fromhex(match.group(3).replace(" ", ""))
                if len(data) == int(match.group(2)):
                    frames.append((None, int(match.group(1), 16), data))
    return [frame for frame in frames if len(frame[2]) <= 8]


def pgn(identifier):
    pdu_format = (identifier >> 16) & 0xFF
    pgn = (identifier >> 8) & 0x1FF00
    return pgn | ((identifier >> 8) & 0xFF) if pdu_format >= 240 else pgn


def shifted(date, ticks, seconds):
    """A day number and time of day moved by `seconds`; as they were where either is not available."""
    if date == 0xFFFF or ticks >= 0xFFFFFFFD:
        return date, ticks
    total = date * TICKS_PER_DAY + ticks + round(seconds * 10_000)
    return total // TICKS_PER_DAY, total % TICKS_PER_DAY


def first_time(frames):
    """The (stamp, receiver time in seconds since 1970) of the first 129029 or 126992 with a time."""
    starts = {}
    for stamp, identifier, data in frames:
        kind, source = pgn(identifier), identifier & 0xFF
        if kind == SYSTEM_TIME and len(data) == 8:
            date, ticks = struct.unpack_from("<HI", data, 2)
        elif kind == POSITION_DATA and len(data) == 8 and data[0] & 0x1F == 0:
            starts[source] = (stamp, data)
            continue
        elif kind == POSITION_DATA and len(data) >= 2 and data[0] & 0x1F == 1 and source in starts:
            stamp, start = starts.pop(source)
            date, ticks = struct.unpack_from("<H", start, 3)[0], int.from_bytes(start[5:8] + data[1:2], "little")
        else:
            continue
        if date != 0xFFFF and ticks < 0xFFFFFFFD:
            return stamp, date * 86400 + ticks / 10_000
    return None


class Retimer:
    """Moves the receiver's times in frames by `seconds`. 129029's time spans its first two frames:
    the first is held until the second comes, then both go out changed."""

    def __init__(self):
        self.held = {}

    def frames(self, identifier, data, seconds):
        kind, source = pgn(identifier), identifier & 0xFF
        if kind == SYSTEM_TIME and len(data) == 8:
            date, ticks = shifted(*struct.unpack_from("<HI", data, 2), seconds)
            return [(identifier, data[:2] + struct.pack("<HI", date, ticks))]
        if kind != POSITION_DATA:
            return [(identifier, data)]
        out = []
        held = self.held.pop(source, None)
        if len(data) == 8 and data[0] & 0x1F == 0:
            if held:
                out.append(held)
            self.held[source] = (identifier, data)
            return out
        if held and len(data) >= 2 and data[0] == held[1][0] + 1:
            start = held[1]
            date, ticks = shifted(struct.unpack_from("<H", start, 3)[0], int.from_bytes(start[5:8] + data[1:2], "little"), seconds)
            time_bytes = struct.pack("<I", ticks)
            out.append((held[0], start[:3] + struct.pack("<H", date) + time_bytes[:3]))
            out.append((identifier, data[:1] + time_bytes[3:] + data[2:]))
            return out
        if held:
            out.append(held)
        out.append((identifier, data))
        return out


def open_bus(interface):
    bus = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    bus.bind((interface,))
    return bus


def send(bus, identifier, data):
    frame = struct.pack("=IB3x8s", identifier | CAN_EFF_FLAG, len(data), data.ljust(8, b"\0"))
    while True:
        try:
            bus.send(frame)
            return True
        except OSError as error:
            # A full queue waits a moment; an interface taken down drops the frame (a bus without the
            # box's adapter), and playing goes on.
            if error.errno == 105:  # ENOBUFS
                time.sleep(0.005)
                continue
            return False


def flood(bus, rate):
    """Other traffic beside the recording, `rate` frames a second: engine parameters (PGN 127488)
    from address 40, which no GNSS reader wants, in bursts every 10 ms."""
    identifier = 0x09F20028
    data = bytes([0, 0x10, 0x27, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF])
    per_burst = max(1, round(rate / 100))
    due = time.time()
    while True:
        for _ in range(per_burst):
            send(bus, identifier, data)
        due += per_burst / rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)


def play(bus, frames, loop, interval):
    stamps = [frame[0] for frame in frames if frame[0] is not None]
    timed = first_time(frames) if stamps else None
    # Receiver time minus log stamp: the clock of the machine that recorded it was off the receiver's.
    lag = timed[0] - timed[1] if timed else 0
    first = stamps[0] if stamps else 0
    duration = (stamps[-1] - first + 1) if stamps else len(frames) * interval
    start = time.time()
    sent = 0
    while True:
        retimer = Retimer()
        shift = start - first + lag
        for index, (stamp, identifier, data) in enumerate(frames):
            due = start + ((stamp - first) if stamp is not None else index * interval)
            pause = due - time.time()
            if pause > 0:
                time.sleep(pause)
            for out_identifier, out_data in (retimer.frames(identifier, data, shift) if timed else [(identifier, data)]):
                sent += send(bus, out_identifier, out_data)
        if not loop:
            return sent
        start += duration


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("interface")
    parser.add_argument("log")
    parser.add_argument("--loop", action="store_true", help="play the log again and again")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between frames of a log without stamps")
    parser.add_argument("--flood", type=int, default=0, help="frames a second of other traffic beside the log (0 to 5000)")
    options = parser.parse_args()
    if not 0.0001 <= options.interval <= 10:
        parser.error("--interval: 0.0001 to 10 seconds")
    if not 0 <= options.flood <= 5000:
        parser.error("--flood: 0 to 5000 frames a second")
    frames = read_log(options.log)
    if not frames:
        parser.error(f"{options.log}: no frames in candump's forms")
    bus = open_bus(options.interface)
    if options.flood:
        threading.Thread(target=flood, args=(bus, options.flood), daemon=True).start()
    sent = play(bus, frames, options.loop, options.interval)
    print(f"{sent} frames sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
