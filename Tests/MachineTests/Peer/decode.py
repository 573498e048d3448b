"""Decodes a candump -l recording's tractor frames with cantools and tractor.dbc, as a second opinion
on agrigps's own reading of them (the tests compare the two). One JSON object per line for each
frame of a message in the DBC: its line number, the message, and each signal as a number, or as
"error" or "not available" by SAE J1939-71's ranges, applied here to the raw value.

Usage: decode.py DBC RECORDING
"""
import json
import re
import sys

import cantools

LINE = re.compile(r"^\((\d+\.\d+)\)\s+\S+\s+([0-9A-Fa-f]{8})#([0-9A-Fa-f]*)\s*$")


def classify(raw, length):
    """J1939's parameter ranges: 2-bit states 2 error, 3 not available; wider values valid to 0xFA..,
    then by the top byte 0xFE error, else not available."""
    if length == 2:
        return {2: "error", 3: "not available"}.get(raw, raw)
    if length in (3, 6):
        return "not available" if raw == (1 << length) - 1 else raw
    top = raw >> (length - 8)
    if top <= 0xFA:
        return raw
    return "error" if top == 0xFE else "not available"


def main(dbc_path, recording):
    database = cantools.database.load_file(dbc_path, frame_id_mask=0x03FFFF00)
    for number, line in enumerate(open(recording, encoding="ascii"), start=1):
        match = LINE.match(line)
        if not match:
            continue
        data = bytes.fromhex(match.group(3))
        try:
            message = database.get_message_by_frame_id(int(match.group(2), 16))
        except KeyError:
            continue
        if len(data) != 8:
            continue
        raw = message.decode(data, decode_choices=False, scaling=False)
        signals = {}
        for signal in message.signals:
            value = classify(int(raw[signal.name]), signal.length)
            signals[signal.name] = value * signal.scale + signal.offset if isinstance(value, int) and signal.length > 6 else value
        print(json.dumps({"line": number, "message": message.name, "signals": signals}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
