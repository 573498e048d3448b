#!/usr/bin/env python3
"""Convert rows of a PolyCAN CSV log (TractorHacking/CAN-data) to candump -l lines.

PolyCAN columns: index, time (ms since the capture started), pgn, priority,
source, destination, data (hex bytes, space separated), description.
The 29-bit id is rebuilt as priority<<26 | pgn<<8 | source, with the
destination put in the PS byte for PDU1 PGNs (PF < 240). PolyCAN logs carry no
absolute time, so a row's timestamp is 1700000000 s + its time / 1000.

usage: convert-polycan.py CSV FIRST_ROW LAST_ROW OUTPUT
FIRST_ROW and LAST_ROW are values of the index column, both included.
Only the frames are written; add the '# Provenance:' line yourself.
"""
import csv
import sys

EPOCH = 1700000000


def main():
    src, first, last, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with open(src, newline="") as f, open(out, "w") as o:
        rows = csv.reader(f)
        next(rows)  # header
        for idx, ms, pgn, prio, sa, da, data, _desc in rows:
            if not first <= int(idx) <= last:
                continue
            pgn = int(pgn)
            can_id = int(prio) << 26 | pgn << 8 | int(sa)
            if (pgn >> 8) & 0xFF < 240:
                can_id |= int(da) << 8
            micros = EPOCH * 1_000_000 + round(float(ms) * 1000)
            o.write("(%d.%06d) can0 %08X#%s\n" % (micros // 1_000_000, micros % 1_000_000,
                                                  can_id, "".join(data.split()).upper()))


if __name__ == "__main__":
    main()
