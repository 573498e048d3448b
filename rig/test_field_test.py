"""Checks of the field rig's own logic that need no virtual machine: the receiver's retiming and the
count of lost samples. Run by script/test before the rig: python3 -m unittest rig/test_field_test.py"""
import datetime
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import field_test  # noqa: E402

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "nmea", "skytraq-dgps.log")


class ReceiverTests(unittest.TestCase):
    def test_epochs_are_moved_to_now_with_fresh_checksums(self):
        epochs = field_test.Receiver.read_epochs(LOG)
        self.assertEqual(len(epochs), 96, "one epoch per second of the log")
        now = datetime.datetime(2026, 11, 24, 4, 5, 6, 250000, tzinfo=datetime.timezone.utc)
        lines = field_test.Receiver.retimed(epochs[0], now).decode().splitlines()
        self.assertTrue(all(field_test.Receiver.fields(line) is not None for line in lines), "every checksum holds")
        kinds = {line[3:6]: line for line in lines}
        self.assertIn("040506.250,", kinds["GGA"])
        self.assertIn(",241126,", kinds["RMC"])
        self.assertIn("040506.250,24,11,2026", kinds["ZDA"])
        self.assertNotIn("STI", "".join(kinds), "proprietary sentences with times of their own are left out")


class AccountTests(unittest.TestCase):
    def rig(self, journal, received, efdi=None):
        work = tempfile.mkdtemp()
        with open(os.path.join(work, "journal-1.log"), "w") as handle:
            for row_id, state, clock, time_ms in journal:
                handle.write(f"[ 1.0] agrigps[9]: 2026-11-24T04:00:00+0000 debug agrigps.spool: clock={clock} id={row_id} "
                             f"state={state} time_ms={time_ms} [Spool] committed sample\n")
        with open(os.path.join(work, "received.jsonl"), "w") as handle:
            entries = [{"time_ms": time_ms, "status": status, "lat": 0, "lon": 0} for time_ms, status in received]
            handle.write(json.dumps({"endpoint": "e", "message": "m", "entries": entries}) + "\n")
            if efdi is not None:
                entries = [{"time_ms": time_ms, "status": status, "lat": 0, "lon": 0} for time_ms, status in efdi]
                handle.write(json.dumps({"endpoint": "e", "message": "n", "format": "time_log", "entries": entries}) + "\n")
                handle.write(json.dumps({"endpoint": "e", "message": "d", "format": "device_description", "designator": "x"}) + "\n")
        rig = field_test.Rig.__new__(field_test.Rig)
        rig.work, rig.boots, rig.endpoint = work, 1, None
        rig.outputs = ("gps_info",) if efdi is None else ("gps_info", "time_log")
        rig.received_path = os.path.join(work, "received.jsonl")
        return rig

    def account(self, journal, received, spool, efdi=None):
        rig = self.rig(journal, received, efdi)
        rig.spooled = lambda agent: spool
        return rig.account(None)

    def test_a_system_time_does_not_take_the_match_of_a_receiver_time(self):
        journal = [(16, "fix_3d_dgps", "system", 263869), (17, "fix_3d_dgps", "receiver", 264000),
                   (18, "fix_3d_dgps", "receiver", 265000)]
        received = [(263128, "dDgnss"), (264000, "dDgnss"), (265000, "dDgnss")]
        self.assertEqual(self.account(journal, received, {})["lost"], 0)

    def test_a_sample_neither_spooled_nor_received_is_lost(self):
        journal = [(1, "no_receiver", "system", 1000), (2, "fix_3d_autonomous", "receiver", 2000),
                   (3, "fix_3d_autonomous", "receiver", 3000), (4, "no_fix", "system", 4000)]
        received = [(1500, "dNotAvailable"), (3000, "dGnss"), (9000, "dNoGps")]
        figures = self.account(journal, received, {4: "pending"})
        self.assertEqual(figures["lost_ids"], [2])
        self.assertEqual((figures["committed"], figures["committed_in_spool"], figures["spooled"]), (4, 1, 1))

    def test_system_times_corrected_by_a_large_offset_still_match(self):
        # A receiver whose time lags makes the daemon correct its system-clock samples by as much.
        journal = [(85, "no_fix", "system", 896855), (86, "no_fix", "system", 897855), (88, "no_receiver", "system", 899995),
                   (90, "fix_3d_dgps", "receiver", 901001)]
        received = [(875138, "dNoGps"), (876138, "dNoGps"), (878278, "dNotAvailable"), (901001, "dDgnss")]
        self.assertEqual(self.account(journal, received, {})["lost"], 0)

    def test_a_status_must_match_too(self):
        figures = self.account([(1, "no_fix", "system", 1000)], [(1000, "dNotAvailable")], {})
        self.assertEqual(figures["lost_ids"], [1])

    def test_a_sample_received_in_one_output_only_is_lost(self):
        journal = [(1, "fix_3d_autonomous", "receiver", 1000), (2, "no_fix", "system", 200_000), (3, "no_fix", "system", 300_000)]
        both = [(1000, "dGnss"), (200_000, "dNoGps"), (300_000, "dNoGps")]
        figures = self.account(journal, both, {}, efdi=[(1000, "dGnss"), (300_000, "dNoGps")])
        self.assertEqual(figures["lost_ids"], [2], "EFDI never got sample 2, though gps:info did")
        self.assertEqual(figures["received_by_output"], {"gps_info": 3, "time_log": 2})
        self.assertEqual(self.account(journal, both, {}, efdi=both)["lost"], 0)

    def test_a_sample_received_twice_is_counted_once_lost_never(self):
        journal = [(1, "fix_3d_dgps", "receiver", 1000), (2, "fix_3d_dgps", "receiver", 2000), (3, "no_fix", "system", 3000)]
        received = [(1000, "dDgnss"), (2000, "dDgnss"), (1000, "dDgnss"), (3000, "dNoGps"), (3000, "dNoGps")]
        figures = self.account(journal, received, {})
        self.assertEqual(figures["lost"], 0)
        self.assertEqual(figures["duplicates"], {"gps_info": 1}, "the system-clock sample's second copy proves nothing")
        self.assertEqual(self.account(journal, received[:2] + received[3:4], {})["duplicates"], {"gps_info": 0})

    def test_a_row_acknowledged_and_not_yet_cleared_is_no_duplicate(self):
        journal = [(1, "fix_3d_dgps", "receiver", 1000), (2, "fix_3d_dgps", "receiver", 2000), (3, "no_fix", "system", 3000)]
        received = [(1000, "dDgnss"), (2000, "dDgnss"), (3000, "dNoGps")]
        figures = self.account(journal, received, {1: "acknowledged", 2: "owed", 3: "acknowledged"})
        self.assertEqual((figures["lost"], figures["duplicates"]), (0, {"gps_info": 0}))
        figures = self.account(journal, received + [(2000, "dDgnss")], {1: "acknowledged"})
        self.assertEqual(figures["duplicates"], {"gps_info": 1})

    def test_a_recording_that_repeats_its_times_is_not_a_duplicate(self):
        # The CAN player loops its recording: two samples at the same time, each received once.
        journal = [(1, "fix_3d_autonomous", "receiver", 1000), (2, "fix_3d_autonomous", "receiver", 1000)]
        figures = self.account(journal, [(1000, "dGnss"), (1000, "dGnss")], {})
        self.assertEqual((figures["lost"], figures["duplicates"]), (0, {"gps_info": 0}))


class WorkStateTests(unittest.TestCase):
    """The tractor's hitch changes against DDI 141 in the TimeLogs."""

    @staticmethod
    def entries(states, start=1_000_000, step=1000):
        return [{"time_ms": start + index * step, "values": {"141": state}} for index, state in enumerate(states)]

    def test_changes_are_found_and_a_gap_is_not_one(self):
        entries = self.entries([0, 0, 1, 1, 3, 3, 1, 0])
        entries[-1]["time_ms"] += 5000  # after a gap (a power cut): not a change seen
        self.assertEqual(field_test.Rig.work_transitions(entries), [(1_001_000, 1_002_000, 1)])

    def test_a_hitch_change_matches_within_one_sample_and_not_beyond(self):
        transitions = field_test.Rig.work_transitions(self.entries([0, 0, 1, 1, 1, 0, 0]))
        offsets, missed, unexplained = field_test.Rig.matched_work([(1_001_600, 1), (1_004_900, 0)], transitions)
        self.assertEqual((offsets, missed, unexplained), ([400, 100], None, []))
        # The Time after the change may be dated before it: its fix was up to a second old.
        self.assertEqual(field_test.Rig.matched_work([(1_002_900, 1)], transitions)[0], [-900])
        self.assertEqual(field_test.Rig.matched_work([(1_004_400, 1)], transitions)[0], [-2400], "a fix 2.4 s old")
        self.assertEqual(field_test.Rig.matched_work([(1_004_600, 1)], transitions)[1], 1_004_600, "older still: not this sample's")
        # Two samples late, or the wrong way, is not a match.
        self.assertEqual(field_test.Rig.matched_work([(999_000, 1)], transitions)[1], 999_000)
        self.assertEqual(field_test.Rig.matched_work([(1_001_600, 0)], transitions)[1], 1_001_600)
        # A change no hitch change explains is left over.
        self.assertEqual(field_test.Rig.matched_work([(1_001_600, 1)], transitions)[2], [(1_004_000, 1_005_000, 0)])

    def test_a_change_just_before_a_cut_explains_its_transition(self):
        # The hitch went in work 0.6 s before the last Time of a boot: not matched (no Time 2 s after
        # it), yet the change to 1 it made is its own; one with no hitch change near it is a stray.
        transitions = [(1_000_000, 1_001_000, 1), (1_020_000, 1_021_000, 0)]
        strays = field_test.Rig.stray_work(transitions, [(1_000_400, 1)], 990_000, 1_030_000)
        self.assertEqual(strays, [(1_020_000, 1_021_000, 0)])
        self.assertEqual(field_test.Rig.stray_work(transitions, [(1_000_400, 0)], 990_000, 1_030_000), transitions)

    def test_the_tractors_lines_are_read_from_each_boots_journal(self):
        rig = field_test.Rig.__new__(field_test.Rig)
        rig.work, rig.boots = tempfile.mkdtemp(), 2
        for boot, lines in ((1, ["tractor: drive 1 starts at 1800000000.000", "tractor: hitch in work at 1800000008.001"]),
                            (2, ["tractor: hitch out of work at 1800000100.250", "tractor: standing at 1800000120.000"])):
            with open(os.path.join(rig.work, f"journal-{boot}.log"), "w") as handle:
                handle.writelines(f"[ 5.0] python3[77]: {line}\n" for line in lines)
        self.assertEqual(rig.tractor_events(), [(1, "drive 1 starts", 1_800_000_000_000), (1, "hitch in work", 1_800_000_008_001),
                                                (2, "hitch out of work", 1_800_000_100_250), (2, "standing", 1_800_000_120_000)])


if __name__ == "__main__":
    unittest.main()


class ShortFormTests(unittest.TestCase):
    CAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "can", field_test.CAN_LOG)

    def test_the_replay_cut_keeps_the_comments_and_the_first_seconds_of_frames(self):
        with open(self.CAN) as handle:
            lines = handle.readlines()
        cut = list(field_test.Rig.cut_candump(lines, 60))
        frames = [float(line[1:line.index(")")]) for line in cut if line.startswith("(")]
        self.assertEqual([line for line in cut if line.startswith("#")], [line for line in lines if line.startswith("#")])
        self.assertEqual(cut, lines[:len(cut)], "the recording's own lines, in order")
        self.assertLessEqual(frames[-1] - frames[0], 60)
        self.assertGreater(frames[-1] - frames[0], 59, "up to the minute's end")
        whole = [float(line[1:line.index(")")]) for line in lines if line.startswith("(")]
        self.assertAlmostEqual(whole[-1] - whole[0], field_test.CAN_LOG_SECONDS, delta=1)

    def test_the_watchdog_drop_in_line_only_when_asked(self):
        rig = field_test.Rig.__new__(field_test.Rig)
        rig.options = type("Options", (), {"watchdog_sec": 0})()
        self.assertEqual(rig.watchdog_setting(), "")
        rig.options.watchdog_sec = 20
        self.assertEqual(rig.watchdog_setting(), "WatchdogSec=20\\n", "printf's escape, for the drop-in's next line")
