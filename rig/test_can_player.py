"""Checks of the field rig's CAN player that need no CAN interface: reading candump's two forms and
moving the receiver's times. Run by script/test: python3 -m unittest rig/test_can_player.py"""
import collections
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import can_player  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "can")
GPSD_LOG = os.path.join(FIXTURES, "logfile_20140914_365495765_can.log")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PEER = os.path.join(ROOT, "Tests", "MachineTests", "Peer")
PEER_PYTHON = os.path.join(ROOT, ".build", "test-peers", "bin", "python")


class FakeBus:
    """Collects what the player sends, on a clock that moves only when the player sleeps."""

    def __init__(self):
        self.now = 1_800_000_000.0
        self.sent = []

    def send(self, frame):
        identifier, _, data = struct.unpack("=IB3x8s", frame)
        self.sent.append((self.now, identifier & 0x1FFFFFFF, data))

    def sleep(self, seconds):
        self.now += seconds


class CANPlayerTests(unittest.TestCase):
    def test_both_forms_are_read(self):
        frames = can_player.read_log(GPSD_LOG)
        self.assertEqual(len(frames), 10_495, "every frame of gpsd's log, as agrigps bus --file counts them")
        self.assertEqual(frames[0], (1410714882.622188, 0x09F80102, bytes.fromhex("36729A16021AB80D")))
        unstamped = can_player.read_log(os.path.join(FIXTURES, "candumpSample1.txt"))
        self.assertEqual(unstamped[0], (None, 0x18EEFF01, bytes.fromhex("05a0be1c00a0a0c0")))
        self.assertTrue(all(stamp is None for stamp, _, _ in unstamped))

    def test_the_receiver_time_is_moved_and_nothing_else(self):
        frames = can_player.read_log(GPSD_LOG)
        stamp, receiver_time = can_player.first_time(frames)
        self.assertAlmostEqual(receiver_time, 1410713584.0, places=3, msg="16:53:04, as gpsd's expected output has it")
        self.assertGreater(stamp - receiver_time, 1200, "the recording machine's clock was 21 minutes ahead")
        shift = 12 * 365.25 * 86400 + 0.25
        retimer = can_player.Retimer()
        played = [(None, identifier, data) for _, i, d in frames for identifier, data in retimer.frames(i, d, shift)]
        self.assertEqual(len(played), len(frames) - len(retimer.held), "no frame lost, but the last one held")
        _, moved = can_player.first_time(played)
        self.assertAlmostEqual(moved, receiver_time + shift, places=3)
        timed = (can_player.POSITION_DATA, can_player.SYSTEM_TIME)

        def untimed(frame_list):
            return collections.Counter((i, d) for _, i, d in frame_list if can_player.pgn(i) not in timed)

        self.assertEqual(untimed(played), untimed(frames), "frames of other PGNs go out as they came")
        # 129029's later frames (its position) are as they were; its first two carry the time.
        def later(frame_list):
            return collections.Counter((i, d) for _, i, d in frame_list
                                       if can_player.pgn(i) == can_player.POSITION_DATA and d[0] & 0x1F >= 2)
        self.assertEqual(later(played), later(frames))
        self.assertNotEqual([d for _, i, d in played if can_player.pgn(i) in timed], [d for _, i, d in frames if can_player.pgn(i) in timed])

    def test_a_time_moves_over_midnight_and_unknown_times_stay(self):
        self.assertEqual(can_player.shifted(20_000, 863_990_000, 2), (20_001, 10_000))
        self.assertEqual(can_player.shifted(0xFFFF, 5, 2), (0xFFFF, 5))
        self.assertEqual(can_player.shifted(20_000, 0xFFFFFFFF, 2), (20_000, 0xFFFFFFFF))
        system_time = 0x09F01002  # 126992 from address 2
        data = bytes([1, 0xF0]) + struct.pack("<HI", 20_000, 10_000)
        [(_, out)] = can_player.Retimer().frames(system_time, data, 86_400)
        self.assertEqual(struct.unpack_from("<HI", out, 2), (20_001, 10_000))


class TractorDriveTests(unittest.TestCase):
    def drive(self):
        bus, printed = FakeBus(), []
        can_player.drive(bus, 1, clock=lambda: bus.now, sleep=bus.sleep, out=lambda text, flush: printed.append(text))
        return bus, printed

    def test_the_changes_are_printed_when_their_frames_go_out(self):
        bus, printed = self.drive()
        start = 1_800_000_000.0
        self.assertEqual(printed[0], f"tractor: drive 1 starts at {start:.3f}")
        changes = [(line.split(" at ")[0], round(float(line.split(" at ")[1]) - start, 3)) for line in printed[1:]]
        self.assertEqual(changes, [("tractor: moving", 3.0), ("tractor: hitch in work", 8.0), ("tractor: hitch out of work", 23.0),
                                   ("tractor: hitch in work", 30.0), ("tractor: hitch out of work", 45.0), ("tractor: standing", 50.0)])
        hitch = [(round(at - start, 1), data[1] >> 6 & 3) for at, identifier, data in bus.sent if can_player.pgn(identifier) == 65093]
        self.assertEqual(len(hitch), 530, "10 a second for 53 s")
        self.assertEqual([at for (at, state), (_, before) in zip(hitch[1:], hitch) if state != before], [8.0, 23.0, 30.0, 45.0])

    def test_a_decoder_from_the_published_layouts_reads_what_the_drive_sends(self):
        """cantools with the tests' DBC (Tests/MachineTests/Peer), a reading independent of the player's."""
        self.assertTrue(os.access(PEER_PYTHON, os.X_OK), "no cantools for the tests: run script/bootstrap")
        bus, _ = self.drive()
        with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
            for at, identifier, data in bus.sent:
                log.write(f"({at:.6f}) can1 {identifier:08X}#{data.hex().upper()}\n")
            log.flush()
            output = subprocess.run([PEER_PYTHON, os.path.join(PEER, "decode.py"), os.path.join(PEER, "tractor.dbc"), log.name],
                                    capture_output=True, text=True, timeout=120, check=True).stdout
        decoded = [json.loads(line) for line in output.splitlines()]
        by_message = collections.defaultdict(list)
        for record in decoded:
            by_message[record["message"]].append(record["signals"])
        self.assertEqual({name: len(values) for name, values in by_message.items()},
                         {"WBSD": 530, "RHS": 530, "EEC1": 530, "LFE1": 530, "HOURS": 53})
        self.assertEqual(sorted({round(v["speed"], 3) for v in by_message["WBSD"]}), [0.0, 2.5])
        self.assertEqual({v["implement_operations"] for v in by_message["WBSD"]}, {"not available"})
        self.assertEqual(collections.Counter(v["in_work"] for v in by_message["RHS"]), {0: 230, 1: 300})
        self.assertEqual({round(v["position"], 1) for v in by_message["RHS"] if v["in_work"] == 1}, {8.0})
        self.assertEqual(sorted({v["engine_speed"] for v in by_message["EEC1"]}), [900.0, 1800.0])
        self.assertEqual(sorted({round(v["fuel_rate"], 2) for v in by_message["LFE1"]}), [4.0, 12.0])
        self.assertEqual({round(v["engine_hours"], 2) for v in by_message["HOURS"]}, {147.55})
        self.assertAlmostEqual(by_message["WBSD"][-1]["distance"], 2.5 * 47, places=3, msg="47 s moving at 2.5 m/s")


if __name__ == "__main__":
    unittest.main()
