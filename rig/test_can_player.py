"""Checks of the field rig's CAN player that need no CAN interface: reading candump's two forms and
moving the receiver's times. Run by script/test: python3 -m unittest rig/test_can_player.py"""
import collections
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import can_player  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "can")
GPSD_LOG = os.path.join(FIXTURES, "logfile_20140914_365495765_can.log")


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


if __name__ == "__main__":
    unittest.main()
