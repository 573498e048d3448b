#!/usr/bin/env python3
"""Plays a candump log onto a CAN interface, as can-utils' canplayer does, for the field rig's guest
(which has Python but no can-utils). Logs with time stamps (candump -l) are played at their pace, with
the receiver's times (PGN 129029's and 126992's) moved to now, round and round with --loop; logs
without (candump's older "<0xID> [n] bytes" form) one frame every --interval seconds.

With --tractor it plays a tractor instead: the log (a real tractor's engine, if given) once, then a
drive built from the published layouts (docs/machine-data.md), again and again with --loop: a
tractor ECU at 0xF0 and an engine at 0 sending wheel-based speed, the rear hitch, engine speed, fuel
rate and engine hours every 100 ms; the tractor pulls away, lowers the hitch into the field, raises
it for the headland turn, lowers it again, raises it and stops. Each change is printed with the time
its first frame went out, for the rig to find in the TimeLogs.

    can_player.py can1 logfile.log --loop
    can_player.py can1 jd5055e-engine.log --tractor --loop
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


def frame_id(pgn, source, priority=3):
    """A broadcast's identifier; PDU1 PGNs go to everyone (destination 0xFF)."""
    pdu_format = (pgn >> 8) & 0xFF
    specific = 0xFF if pdu_format < 240 else pgn & 0xFF
    return priority << 26 | (pgn >> 16 & 0x3) << 24 | pdu_format << 16 | specific << 8 | source


TRACTOR_ECU, ENGINE = 0xF0, 0


def claim(source, function, device_class, identity):
    """An address claim (60928): NAME in agriculture (industry group 2), arbitrary address capable."""
    name = struct.pack("<I", identity & 0x1FFFFF) + bytes([0, function, device_class << 1, 2 << 4 | 0x80])
    return frame_id(60928, source, 6), name


def tractor_frames(speed_mm, distance_mm, in_work, eighths_rpm, twentieths_l_h, with_hours):
    """One 100 ms round of the tractor's broadcasts. Wheel-based speed forward, key not off, implement
    operations not available (so only the hitch says work); the hitch at 8 % in work, 92 % out."""
    last = 1 | 1 << 2 | 3 << 4 | 3 << 6
    frames = [
        (frame_id(65096, TRACTOR_ECU), struct.pack("<HI", speed_mm, distance_mm & 0xFFFFFFFF) + bytes([0xFF, last])),
        (frame_id(65093, TRACTOR_ECU), bytes([20 if in_work else 230, 0b111 << 3 | (1 if in_work else 0) << 6 | 0b111]) + b"\xff" * 6),
        (frame_id(61444, ENGINE), bytes([0xF0, 0x7D, 0x7D]) + struct.pack("<H", eighths_rpm) + bytes([0x00, 0xFF, 0xFF])),
        (frame_id(65266, ENGINE, 6), struct.pack("<H", twentieths_l_h) + b"\xff" * 6),
    ]
    if with_hours:
        frames.append((frame_id(65253, ENGINE, 6), struct.pack("<I", 2951) + b"\xff" * 4))  # 147.55 h, as the JD said
    return frames


# The drive, in seconds from its start: (when, moving, hitch in work).
DRIVE = [(0, False, False), (3, True, False), (8, True, True), (23, True, False), (30, True, True), (45, True, False), (50, False, False)]
DRIVE_SECONDS = 53
SPEED_MM = 2_500


def drive_state(offset):
    """(moving, in work) `offset` seconds into the drive."""
    return next((moving, in_work) for when, moving, in_work in reversed(DRIVE) if offset >= when)


def drive(bus, number, clock=time.time, sleep=time.sleep, out=print):
    """One drive, live at 10 Hz; prints the start and each change of motion or hitch with its time."""
    start = clock()
    for identifier, data in (claim(TRACTOR_ECU, 134, 0, 7), claim(ENGINE, 0, 1, 8)):
        send(bus, identifier, data)
    out(f"tractor: drive {number} starts at {start:.3f}", flush=True)
    distance, state, step = 0, None, 0
    while step * 0.1 < DRIVE_SECONDS:
        due = start + step * 0.1
        pause = due - clock()
        if pause > 0:
            sleep(pause)
        moving, in_work = drive_state(step * 0.1)
        if state is not None and (moving, in_work) != state:
            now = clock()
            if moving != state[0]:
                out(f"tractor: {'moving' if moving else 'standing'} at {now:.3f}", flush=True)
            if in_work != state[1]:
                out(f"tractor: hitch {'in' if in_work else 'out of'} work at {now:.3f}", flush=True)
        state = (moving, in_work)
        speed = SPEED_MM if moving else 0
        for identifier, data in tractor_frames(speed, distance, in_work, 14_400 if moving else 7_200, 240 if moving else 80, step % 10 == 0):
            send(bus, identifier, data)
        distance += speed // 10
        step += 1


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
    parser.add_argument("log", nargs="?", help="the candump log (with --tractor, a real tractor's engine played before the drive)")
    parser.add_argument("--tractor", action="store_true", help="play a tractor's drive (see above)")
    parser.add_argument("--loop", action="store_true", help="play the log again and again")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between frames of a log without stamps")
    parser.add_argument("--flood", type=int, default=0, help="frames a second of other traffic beside the log (0 to 5000)")
    options = parser.parse_args()
    if not 0.0001 <= options.interval <= 10:
        parser.error("--interval: 0.0001 to 10 seconds")
    if not 0 <= options.flood <= 5000:
        parser.error("--flood: 0 to 5000 frames a second")
    if options.log is None and not options.tractor:
        parser.error("a log to play, or --tractor")
    frames = read_log(options.log) if options.log else []
    if options.log and not frames:
        parser.error(f"{options.log}: no frames in candump's forms")
    bus = open_bus(options.interface)
    if options.tractor:
        if frames:
            print(f"tractor: the engine's recording, {len(frames)} frames", flush=True)
            play(bus, frames, False, options.interval)
        number = 1
        while True:
            drive(bus, number)
            if not options.loop:
                return 0
            number += 1
    if options.flood:
        threading.Thread(target=flood, args=(bus, options.flood), daemon=True).start()
    sent = play(bus, frames, options.loop, options.interval)
    print(f"{sent} frames sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
