#!/usr/bin/env python3
"""The field rig: agrigps's Debian package on Debian 12 under systemd, in QEMU, with an emulated USB
GNSS receiver (an FTDI FT232, which only the project's udev rule hands to gpsd) fed from a recorded
NMEA log, the local agrirouter on the host, a pulled and replugged receiver, a watchdog stall and
power cuts. Run by script/field-test, which builds the package, the image and the local agrirouter.

Every wait has a bound; a check that fails ends the run with exit code 1 and says what it saw.
"""
import argparse
import base64
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TAN = "FIELDRIG1"
STATE_DIR = "/var/lib/agrigps"
HOST_FROM_GUEST = "10.0.2.2"  # QEMU's user-mode network: the host's loopback, as the guest sees it
CA_IN_GUEST = "/etc/agrigps/local-agrirouter-ca.pem"
# Recordings of NMEA 2000 buses (Fixtures/can): gpsd's regression log (a Garmin GPS 17x at address 2,
# with gpsd's positions beside it), canboat's power-up (a GPS at address 0 whose first frames come
# from 1 and 35) and canboat's bus with 129025 only.
CAN_LOG = "logfile_20140914_365495765_can.log"
# Its span from the first frame to the last, and the name of its first minutes' copy.
CAN_LOG_SECONDS = 215
CAN_REPLAY_CUT = "replay-cut_can.log"
CAN_POSITIONS = "logfile_20140914_365495765_can.tpv.jsonl"
CAN_FIRST_SENDER_LOG = "candumpSample1.txt"
CAN_NO_FIX_DATA_LOG = "candumpSample3.txt"
# A John Deere 5055E's engine (Fixtures/can), played before the tractor's built drive (can_player.py --tractor).
TRACTOR_ENGINE_LOG = "jd5055e-engine.log"
TRACTOR_ECU_ADDRESS = 0xF0
TRACTOR_EVENT = re.compile(r"tractor: (drive \d+ starts|moving|standing|hitch in work|hitch out of work) at (\d+\.\d+)")
NO_POSITION = {"no_fix": "dNoGps", "no_receiver": "dNotAvailable", "gpsd_unreachable": "dError"}
# A fix's quality (the last part of its state, fix_3d_dgps) as gps:info's position status.
QUALITY = {"autonomous": "dGnss", "dgps": "dDgnss", "rtk_fixed": "dRtkFinteger", "rtk_float": "dRtkFloat",
           "dead_reckoning": "dEstDrMode", "simulated": "dSimulateMode", "manual": "dManualInput"}


def position_status(state):
    if state in NO_POSITION:
        return NO_POSITION[state]
    return QUALITY.get(state.split("_", 2)[-1], "unknown")


class RigFailure(Exception):
    pass


def log(text):
    print(f"field-test: {text}", flush=True)


def wait_for(what, seconds, probe, interval=0.5):
    """Calls probe until it returns something true, for at most `seconds`; returns (value, elapsed)."""
    start = time.monotonic()
    last = None
    while True:
        try:
            value = probe()
        except (RigFailure, OSError) as error:
            value, last = None, error
        if value:
            return value, time.monotonic() - start
        if time.monotonic() - start > seconds:
            raise RigFailure(f"{what}: not within {seconds} s" + (f" (last error: {last})" if last else ""))
        time.sleep(interval)


def die_with_parent():
    """In the child before exec: a rig killed from outside (a CI time limit) takes QEMU with it."""
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# MARK: - The receiver

class Receiver(threading.Thread):
    """Writes a recorded NMEA log into the emulated USB receiver's socket, one epoch a second, with
    each epoch's time and date moved to now (fresh checksums), round and round. While nothing is
    connected, epochs pass unsent, as a receiver's output does with no cable."""

    TIMED = {"GGA": 1, "RMC": 1, "GLL": 5, "ZDA": 1, "GST": 1, "GNS": 1}
    UNTIMED = {"GSA", "GSV", "VTG"}

    def __init__(self, path):
        super().__init__(daemon=True)
        self.epochs = self.read_epochs(path)
        if not self.epochs:
            raise RigFailure(f"{path} has no NMEA epochs with a time")
        self.port = None
        self.lock = threading.Lock()
        self.sent_epochs = 0

    @classmethod
    def read_epochs(cls, path):
        epochs, current, current_time = [], [], None
        with open(path, "rb") as log_file:
            for raw in log_file:
                line = raw.decode("ascii", "replace").strip()
                fields = cls.fields(line)
                if fields is None:
                    continue
                kind = fields[0][-3:]
                if kind in cls.TIMED:
                    stamp = fields[cls.TIMED[kind]]
                    if current and stamp and stamp != current_time:
                        epochs.append(current)
                        current = []
                    current_time = stamp or current_time
                elif kind not in cls.UNTIMED:
                    continue  # proprietary sentences carry times of their own; they are left out
                current.append(fields)
        if current:
            epochs.append(current)
        return epochs

    @classmethod
    def fields(cls, line):
        if not line.startswith("$") or "*" not in line:
            return None
        body, checksum = line[1:].rsplit("*", 1)
        if checksum[:2].upper() != cls.checksum(body):
            return None
        return body.split(",")

    @staticmethod
    def checksum(body):
        """NMEA's checksum: the XOR of the bytes between '$' and '*', as two hex digits."""
        total = 0
        for byte in body.encode("ascii", "replace"):
            total ^= byte
        return f"{total:02X}"

    @classmethod
    def retimed(cls, epoch, now):
        lines = []
        for fields in epoch:
            fields = list(fields)
            kind = fields[0][-3:]
            if kind in cls.TIMED:
                index = cls.TIMED[kind]
                decimals = len(fields[index].split(".", 1)[1]) if "." in fields[index] else 0
                stamp = now.strftime("%H%M%S")
                if decimals:
                    stamp += "." + f"{now.microsecond / 1e6:.{decimals}f}".split(".")[1]
                fields[index] = stamp
                if kind == "RMC" and len(fields) > 9:
                    fields[9] = now.strftime("%d%m%y")
                if kind == "ZDA" and len(fields) > 4:
                    fields[2:5] = [now.strftime("%d"), now.strftime("%m"), now.strftime("%Y")]
            body = ",".join(fields)
            lines.append(f"${body}*{cls.checksum(body)}\r\n")
        return "".join(lines).encode("ascii")

    def attach(self, port):
        with self.lock:
            self.port = port

    def run(self):
        connection, connected_port, index = None, None, 0
        while True:
            # The next whole second, as a receiver's epochs come.
            time.sleep(1 - (time.time() % 1))
            with self.lock:
                port = self.port
            if connection is not None and port != connected_port:
                connection.close()
                connection = None
            if connection is None and port is not None:
                try:
                    connection = socket.create_connection(("127.0.0.1", port), timeout=0.5)
                    connected_port = port
                except OSError:
                    connection = None
            payload = self.retimed(self.epochs[index % len(self.epochs)], datetime.datetime.now(datetime.timezone.utc))
            index += 1
            if connection is not None:
                try:
                    connection.sendall(payload)
                    self.sent_epochs += 1
                except OSError:
                    connection.close()
                    connection = None


# MARK: - The guest

class Agent:
    """The guest's rig-agent over its virtio serial port: a script in, its exit code and output back."""

    def __init__(self, path):
        self.path = path
        self.socket = None
        self.buffer = b""
        self.counter = 0

    def connect(self):
        self.close()
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(self.path)

    def close(self):
        if self.socket is not None:
            self.socket.close()
            self.socket = None
            self.buffer = b""

    def run(self, script, timeout=60):
        """(exit code, output) of `script` run by sh in the guest."""
        if self.socket is None:
            self.connect()
        self.counter += 1
        ident = f"c{self.counter}"
        self.socket.sendall(f"{ident} {base64.b64encode(script.encode()).decode()}\n".encode())
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                parts = line.decode("ascii", "replace").split(" ", 2)
                if len(parts) >= 2 and parts[0] == ident:
                    output = base64.b64decode(parts[2]).decode("utf-8", "replace") if len(parts) == 3 else ""
                    return int(parts[1]), output
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RigFailure(f"the guest did not answer within {timeout} s: {script[:80]}")
            self.socket.settimeout(remaining)
            try:
                chunk = self.socket.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                self.close()
                raise RigFailure("the guest agent's port closed")
            self.buffer += chunk

    def check(self, script, timeout=60):
        code, output = self.run(script, timeout)
        if code != 0:
            raise RigFailure(f"in the guest, exit code {code}: {script}\n{output}")
        return output

    def ping(self):
        """True once the agent answers; a question left unanswered is dropped, not waited for."""
        try:
            return self.run("true", timeout=2)[0] == 0
        except (RigFailure, OSError):
            self.close()
            return False


class Monitor:
    """QEMU's machine protocol (QMP) on a unix socket: one JSON command, one JSON answer; events between are skipped."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.settimeout(10)
        self.socket.connect(path)
        self.reader = self.socket.makefile("rb")
        self.read()  # the greeting
        self.execute("qmp_capabilities")

    def read(self):
        line = self.reader.readline()
        if not line:
            raise RigFailure("QEMU's monitor closed")
        return json.loads(line)

    def execute(self, command, **arguments):
        """The command's return value; its error as a RigFailure."""
        message = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        self.socket.sendall(json.dumps(message).encode() + b"\n")
        while True:
            answer = self.read()
            if "return" in answer:
                return answer["return"]
            if "error" in answer:
                raise RigFailure(f"{command}: {answer['error'].get('desc', answer['error'])}")


class Machine:
    """One boot of the guest: QEMU with the image, the agent's and monitor's sockets, the receiver's
    chardev, two serial ports written to files on the host (the console, and the journal)."""

    def __init__(self, rig, boot, receiver_port):
        self.rig = rig
        self.boot = boot
        work = rig.work
        self.agent_path = os.path.join(work, f"agent-{boot}.sock")
        self.monitor_path = os.path.join(work, f"qmp-{boot}.sock")
        self.console = os.path.join(work, f"console-{boot}.log")
        self.journal = os.path.join(work, f"journal-{boot}.log")
        command = [
            "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "1024", "-smp", "2",
            "-display", "none", "-no-reboot",
            "-kernel", os.path.join(rig.image, "vmlinuz"), "-initrd", os.path.join(rig.image, "initrd.img"),
            # no_timer_check: under emulation on a busy host the kernel's IO-APIC timer check can
            # fail and panic the boot ("IO-APIC + timer doesn't work"); virtual machines skip it.
            "-append", "root=/dev/vda ro console=ttyS0 quiet no_timer_check",
            "-drive", f"file={rig.disk},format=raw,if=virtio,cache=writeback",
            "-drive", f"file={rig.transfer},format=raw,if=virtio,readonly=on",
            "-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0",
            "-chardev", f"file,id=console,path={self.console}", "-serial", "chardev:console",
            "-chardev", f"file,id=journal,path={self.journal}", "-serial", "chardev:journal",
            "-qmp", f"unix:{self.monitor_path},server=on,wait=off",
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=agent,path={self.agent_path},server=on,wait=off",
            "-device", "virtserialport,chardev=agent,name=rig.agent",
            "-device", "qemu-xhci,id=xhci",
            # A CAN bus with two kvaser_pci adapters on it: the box's (can0 in the guest) and the
            # tractor's, where a receiver's recording is played (can1).
            "-object", "can-bus,id=canbus0",
            "-device", "kvaser_pci,canbus=canbus0", "-device", "kvaser_pci,canbus=canbus0",
        ]
        self.chardev_serial = 0
        if receiver_port is not None:
            self.chardev_serial += 1
            command += ["-chardev", f"socket,id=gnss{self.chardev_serial},host=127.0.0.1,port={receiver_port},server=on,wait=off",
                        "-device", f"usb-serial,id=gnss0,bus=xhci.0,chardev=gnss{self.chardev_serial}"]
        self.started = time.monotonic()
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, f"qemu-{boot}.log"), "wb"),
                                        stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        # The receiver's output is attached once the guest is up (Rig.boot). Before that nothing reads
        # the emulated port, and QEMU's socket would keep every epoch and hand gpsd a burst of old ones
        # at the first read: a real receiver's FTDI chip drops what nobody reads.
        rig.receiver.attach(None)
        _, _ = wait_for("QEMU's sockets", 20, lambda: os.path.exists(self.monitor_path) and os.path.exists(self.agent_path), 0.1)
        # The socket's file is there once QEMU has bound it, which is a moment before it listens: a
        # connection refused in between is tried again.
        self.monitor, _ = wait_for("QEMU's monitor", 20, self.connect_monitor, 0.1)
        self.agent = Agent(self.agent_path)

    def connect_monitor(self):
        if self.process.poll() is not None:
            with open(os.path.join(self.rig.work, f"qemu-{self.boot}.log"), errors="replace") as handle:
                raise RigFailure(f"QEMU exited ({self.process.returncode}) at boot {self.boot}: {handle.read()[-1500:]}")
        return Monitor(self.monitor_path)

    def wait_until_up(self, bound):
        """Seconds from QEMU's start to multi-user.target active."""
        wait_for("the guest's agent", bound, self.agent.ping, 1)
        remaining = max(10, bound - (time.monotonic() - self.started))
        wait_for("multi-user.target", remaining, lambda: self.agent.run("systemctl is-active multi-user.target", 10)[0] == 0, 1)
        return time.monotonic() - self.started

    def power_cut(self):
        """SIGKILL: the guest's page cache is lost, what it synced stays on the image."""
        self.process.kill()
        self.process.wait(timeout=30)
        self.agent.close()

    def shut_down(self):
        if self.process.poll() is None:
            try:
                self.agent.run("systemctl poweroff", timeout=5)
            except (RigFailure, OSError):
                pass
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self.agent.close()

    def unplug(self):
        self.monitor.execute("device_del", id="gnss0")
        # The old chardev would keep taking NMEA while unplugged and replay it as a burst after the
        # replug: it goes, and the replug gets a new one under a new id (QEMU refuses an old id again).
        wait_for("chardev-remove", 10, lambda: self.monitor.execute("chardev-remove", id=f"gnss{self.chardev_serial}") == {}, 0.2)
        self.rig.receiver.attach(None)

    def replug(self):
        self.chardev_serial += 1
        port = free_port()
        address = {"type": "inet", "data": {"host": "127.0.0.1", "port": str(port)}}
        self.monitor.execute("chardev-add", id=f"gnss{self.chardev_serial}",
                             backend={"type": "socket", "data": {"addr": address, "server": True, "wait": False}})
        self.rig.receiver.attach(port)
        self.rig.receiver_port = port
        self.monitor.execute("device_add", driver="usb-serial", id="gnss0", bus="xhci.0", chardev=f"gnss{self.chardev_serial}")


# MARK: - The rig

class Rig:
    def __init__(self, options):
        self.options = options
        self.image = options.image
        self.work = tempfile.mkdtemp(prefix="agrigps-field-")
        self.disk = os.path.join(self.work, "root.raw")
        self.transfer = os.path.join(self.work, "transfer.raw")
        self.received_path = os.path.join(self.work, "received.jsonl")
        # What the guest's daemon publishes with the package's configuration: both outputs.
        self.outputs = ("gps_info", "time_log")
        self.receiver = Receiver(options.nmea)
        self.receiver_port = None
        self.machine = None
        self.boots = 0
        self.sim = None
        self.endpoint = None
        self.figures = {"boot_s": [], "cuts": []}

    # The local agrirouter, on the host's loopback, which the guest reaches at 10.0.2.2.
    def start_sim(self):
        ca = os.path.join(self.work, "local-agrirouter-ca.pem")
        self.sim_log = open(os.path.join(self.work, "agrirouter-sim.log"), "wb")
        self.sim = subprocess.Popen([self.options.sim, "--tan", f"{TAN}=Field-Rig-Tractor", "--ca-file", ca,
                                     "--advertised-host", HOST_FROM_GUEST, "--received", self.received_path],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.sim_log, preexec_fn=die_with_parent)
        line = self.sim.stdout.readline().decode()
        match = re.search(r"onboarding at (https://\S+)", line)
        if not match:
            raise RigFailure(f"agrirouter-sim did not start: {line!r}")
        self.onboarding_url = match.group(1)
        return ca

    def received(self, output="gps_info"):
        """Every entry the local agrirouter accepted from our endpoint in this output, in order: gps:info's
        GPS entries, or the Times of EFDI TimeLogs ("time_log")."""
        entries = []
        try:
            with open(self.received_path) as handle:
                for line in handle:
                    if not line.endswith("\n"):
                        break  # being written
                    record = json.loads(line)
                    if record.get("format", "gps_info") != output:
                        continue
                    if self.endpoint is None or record["endpoint"] == self.endpoint:
                        entries.extend(record["entries"])
        except FileNotFoundError:
            pass
        return entries

    def commits_in_boot(self, boot):
        with open(os.path.join(self.work, f"journal-{boot}.log"), "rb") as handle:
            return sum(1 for line in handle if b"committed sample" in line)

    def journal_matches(self, pattern):
        """(boot, match) for each line of each boot's journal copy on the host that `pattern` finds."""
        for boot in range(1, self.boots + 1):
            path = os.path.join(self.work, f"journal-{boot}.log")
            if not os.path.exists(path):
                continue
            with open(path, "rb") as handle:
                for raw in handle:
                    match = pattern.search(raw.decode("utf-8", "replace"))
                    if match:
                        yield boot, match

    def committed(self):
        """Every sample the daemon logged as committed, from the journal's copy on the host, by row id."""
        pattern = re.compile(r"clock=(\w+) id=(\d+) state=(\S+) time_ms=(-?\d+).*committed sample")
        return {int(match.group(2)): (match.group(3), int(match.group(4)), match.group(1)) for _, match in self.journal_matches(pattern)}

    def make_transfer_disk(self, ca):
        folder = os.path.join(self.work, "transfer")
        os.makedirs(folder)
        shutil.copy(self.options.deb, folder)
        if self.options.upgrade_from:
            shutil.copy(self.options.upgrade_from, folder)
        shutil.copy(ca, os.path.join(folder, "local-agrirouter-ca.pem"))
        shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "can_player.py"), folder)
        for name in (CAN_LOG, CAN_FIRST_SENDER_LOG, CAN_NO_FIX_DATA_LOG, TRACTOR_ENGINE_LOG):
            shutil.copy(os.path.join(self.options.can_fixtures, name), folder)
        if self.options.can_replay_seconds:
            with open(os.path.join(self.options.can_fixtures, CAN_LOG)) as source, \
                    open(os.path.join(folder, CAN_REPLAY_CUT), "w") as cut:
                cut.writelines(self.cut_candump(source, self.options.can_replay_seconds))
        # Room for the package (a debug build's, with the Swift runtime, is about 50 MB) and the file system's own.
        packages = [self.options.deb] + ([self.options.upgrade_from] if self.options.upgrade_from else [])
        size_mib = max(64, sum(os.path.getsize(deb) for deb in packages) // 2**20 + 32)
        subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", folder, self.transfer, f"{size_mib}M"], check=True, stdout=subprocess.DEVNULL)

    def boot(self, receiver_port):
        self.boots += 1
        self.machine = Machine(self, self.boots, receiver_port)
        seconds = self.machine.wait_until_up(self.options.boot_bound)
        if receiver_port is not None:
            self.receiver.attach(receiver_port)
        self.figures["boot_s"].append(round(seconds, 1))
        log(f"boot {self.boots}: multi-user in {seconds:.1f} s")
        return self.machine.agent

    # MARK: Steps

    @staticmethod
    def apt_install(agent, package):
        """Installs `package` from the transfer disk as an unattended upgrade would: a configuration
        file the integrator changed is kept. Returns the seconds it took."""
        started = time.monotonic()
        agent.check("DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-confdef "
                    f"-o Dpkg::Options::=--force-confold /mnt/rig/{os.path.basename(package)}", timeout=300)
        return round(time.monotonic() - started, 1)

    def install(self, agent, package=None):
        deb = os.path.basename(package or self.options.deb)
        agent.check("mkdir -p /mnt/rig && mount -o ro /dev/vdb /mnt/rig")
        log(f"apt-get install ./{deb}: {self.apt_install(agent, deb)} s")
        agent.check(f"install -m 0644 /mnt/rig/local-agrirouter-ca.pem {CA_IN_GUEST} && adduser --quiet field agrigps")
        # Every committed sample in the journal, whose copy on the second serial port survives a power cut.
        agent.check("mkdir -p /etc/systemd/system/agrigps.service.d && "
                    f"printf '[Service]\\nEnvironment=AGRIGPS_LOG_LEVEL=debug\\n{self.watchdog_setting()}' > /etc/systemd/system/agrigps.service.d/field-rig.conf && "
                    "systemctl daemon-reload && systemctl restart agrigps.service")
        # The rig's own set-up is on the disk before the power cut that follows onboarding: that cut
        # tests what `agrigps onboard` made durable, not the drop-in above.
        agent.check("sync")
        output = agent.check(f"runuser -u agrigps -- agrigps onboard --env local --tan {TAN} --onboarding-url {self.onboarding_url} "
                             f"--ca-file {CA_IN_GUEST} --application-id field-rig-application --certification-version-id field-rig-version "
                             f"--state-dir {STATE_DIR}", timeout=120)
        # "... as endpoint ID, over REST." (or an older agrigps's "... as endpoint ID.")
        match = re.search(r"endpoint ([^\s,]+)[,.]", output)
        if not match:
            raise RigFailure(f"onboarding said: {output}")
        self.endpoint = match.group(1)
        log(f"onboarded as endpoint {self.endpoint}")

    def watchdog_setting(self):
        """The drop-in's line for --watchdog-sec: the unit's own period unless one is given."""
        seconds = self.options.watchdog_sec
        return f"WatchdogSec={seconds}\\n" if seconds else ""

    def service_ready(self, agent, bound=120):
        """The unit is active (Type=notify: the daemon said READY) and its main process runs."""
        def ready():
            output = agent.run("systemctl show -p ActiveState -p SubState -p MainPID agrigps.service", 10)[1]
            values = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
            if values.get("ActiveState") == "active" and values.get("SubState") == "running" and values.get("MainPID", "0") != "0":
                return int(values["MainPID"])
            return None
        return wait_for("agrigps.service active (READY)", bound, ready, 0.5)

    def status(self, agent):
        """`agrigps status --json` as a member of group agrigps who is not root."""
        code, output = agent.run(f"runuser -u field -- agrigps status --json --state-dir {STATE_DIR}", 20)
        try:
            return code, json.loads(output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RigFailure(f"agrigps status as user field (exit {code}): {output}")

    def status_ok(self, agent):
        code, status = self.status(agent)
        return status if code == 0 and status.get("health") == "OK" else None

    def check_device(self, agent):
        """udev gave the receiver its name through the project's rule, and gpsd got it by the rule's gpsdctl@ unit."""
        def present():
            # readlink -e fails until the link exists: udev's database can name the device a moment
            # before the link is made, and `readlink -f` would then print the link's own path.
            code, output = agent.run("readlink -e /dev/agrigps-gnss && udevadm info -q property -n /dev/agrigps-gnss", 10)
            lines = output.splitlines()
            ok = code == 0 and lines and re.fullmatch(r"/dev/tty\w+", lines[0]) and "AGRIGPS_GNSS=ftdi" in output and "gpsdctl@" in output
            return output if ok else None
        output, seconds = wait_for("/dev/agrigps-gnss from the project's udev rule", 30, present)
        tty = output.splitlines()[0].rsplit("/", 1)[-1]
        wait_for(f"gpsdctl@{tty}.service active", 30,
                 lambda: agent.run(f"systemctl is-active gpsdctl@{tty}.service", 10)[0] == 0)
        devices, _ = wait_for("gpsd's device list", 30, lambda: self.gpsd_devices(agent, tty))
        return tty, devices

    @staticmethod
    def gpsd_devices(agent, tty):
        # The guest has no gpspipe (gpsd-clients pulls in GTK): bash's /dev/tcp asks gpsd itself.
        script = "bash <<'ASK'\nexec 3<>/dev/tcp/127.0.0.1/2947\nprintf '?DEVICES;\\n' >&3\ntimeout 2 cat <&3\nexit 0\nASK"
        output = agent.run(script, 10)[1]
        return output if f"/dev/{tty}" in output else None

    def entries_since(self, count, predicate):
        return [entry for entry in self.received()[count:] if predicate(entry)]

    def wait_acknowledged(self, agent, bound):
        """Samples with a fix reach the local agrirouter, and status says OK."""
        before = len(self.received())
        _, seconds = wait_for("fixes received by the local agrirouter", bound,
                              lambda: self.entries_since(before, lambda e: e["status"] not in NO_POSITION.values()))
        status, ok_seconds = wait_for("agrigps status OK (as user field)", bound, lambda: self.status_ok(agent))
        return seconds, ok_seconds, status

    def check_journal(self, agent):
        output = agent.check("journalctl -u agrigps.service --no-pager -o cat -n 200")
        if "committed sample" not in output or not re.search(r"agrigps", output):
            raise RigFailure(f"the journal has none of the daemon's lines:\n{output[-2000:]}")
        return len(output.splitlines())

    # A row is done once every output is: acknowledged in the row, or in flight in an acknowledged
    # batch (the acknowledgement writes only the batch's row), or not wanted by that output.
    DONE = " AND ".join(
        f"(s.{prefix}delivery IN ('acknowledged', 'off') OR (s.{prefix}delivery = 'in_flight' AND {b}.acknowledged_at IS NOT NULL))"
        for prefix, b in (("", "g"), ("efdi_", "e")))
    SPOOLED = ("SELECT s.id || ' ' || CASE WHEN s.acknowledged_at IS NOT NULL OR (" + DONE + ") THEN 'acknowledged' ELSE 'owed' END "
               "FROM sample s LEFT JOIN batch g ON g.output = 'gps_info' AND g.number = s.batch_id "
               "LEFT JOIN batch e ON e.output = 'efdi' AND e.number = s.efdi_batch_id;")

    def spooled(self, agent):
        """Row ids in the spool and whether every output is done with them, and SQLite's integrity
        check, read while it runs."""
        output = agent.check(f"sqlite3 -readonly {STATE_DIR}/spool.sqlite 'PRAGMA integrity_check;' \"{self.SPOOLED}\"")
        lines = output.splitlines()
        if not lines or lines[0] != "ok":
            raise RigFailure(f"PRAGMA integrity_check: {output[:2000]}")
        return {int(line.split()[0]): line.split()[1] for line in lines[1:] if line.strip()}

    def account(self, agent):
        """Every sample the journal's copy shows committed is still in the spool, or the local agrirouter
        has it in every output the daemon publishes (gps:info and EFDI by default). Read in this order:
        the journal's copy (a sample in it was committed before the spool is read), the spool, then
        what the agrirouter received (a sample that left the spool in between was acknowledged in
        every output, so the agrirouter had it before it answered)."""
        committed = self.committed()
        spool = self.spooled(agent)
        received = {output: self.received(output) for output in self.outputs}
        lost = set()
        duplicates = {}
        for output, entries in received.items():
            missing, twice = self.matched(committed, spool, entries)
            lost |= set(missing)
            duplicates[output] = twice
        in_spool = sum(1 for row_id in committed if row_id in spool)
        pending = sum(1 for delivery in spool.values() if delivery != "acknowledged")
        return {"committed": len(committed), "received": len(received[self.outputs[0]]),
                "received_by_output": {output: len(entries) for output, entries in received.items()}, "spooled": pending,
                "committed_in_spool": in_spool, "lost": len(lost), "lost_ids": sorted(lost)[:20], "duplicates": duplicates}

    @staticmethod
    def matched(committed, spool, received):
        """The committed samples neither in the spool nor among `received` (one output's entries), and
        how many entries arrived twice: those left over once every sample took its match, at the exact
        time and status of a sample dated by the receiver (a system time matches within a minute, so
        one left over there proves nothing)."""
        # The received times by status, each to be matched once.
        unmatched = {}
        for entry in received:
            unmatched.setdefault(entry["status"], []).append(entry["time_ms"])
        for times in unmatched.values():
            times.sort()
        lost = []
        # The receiver's time is sent as it is, so those match exactly (to the rounding of a
        # millisecond), and first. The system's time is corrected to the best known UTC when sent, by
        # an offset that changes little from one sample to the next but can be large (a clock that is
        # off, a receiver's time that lags): in time order, each takes the earliest unmatched time
        # within a minute.
        samples = sorted(committed.items(), key=lambda item: (item[1][2] != "receiver", item[1][1]))
        for row_id, (state, time_ms, clock) in samples:
            # A row still in the spool may have arrived already (acknowledged and not yet cleared, or
            # in flight): it takes its match too, or its entry would be left over as if twice. One
            # not acknowledged and dated by the system clock is left out, as its minute of tolerance
            # could take another sample's match.
            in_spool = row_id in spool
            if in_spool and clock != "receiver" and spool[row_id] != "acknowledged":
                continue
            times = unmatched.get(position_status(state), [])
            tolerance = 1 if clock == "receiver" else 60_000
            match = next((t for t in times if abs(t - time_ms) <= tolerance), None)
            if match is not None:
                times.remove(match)
            elif not in_spool:
                lost.append(row_id)
        exact = {(position_status(state), time_ms) for state, time_ms, clock in committed.values() if clock == "receiver"}
        twice = sum(1 for status, times in unmatched.items() for t in times
                    if any((status, t + delta) in exact for delta in (-1, 0, 1)))
        return lost, twice

    def expect_nothing_lost(self, agent, when):
        figures = self.account(agent)
        log(f"{when}: committed {figures['committed']}, received {figures['received_by_output']}, "
            f"still spooled {figures['spooled']}, lost {figures['lost']}, received twice {figures['duplicates']}")
        if figures["lost"]:
            raise RigFailure(f"{when}: {figures['lost']} committed samples neither in the spool nor received: ids {figures['lost_ids']}")
        if any(figures["duplicates"].values()):
            raise RigFailure(f"{when}: samples received twice, by output: {figures['duplicates']}")
        return figures

    def plug_and_fix(self, agent):
        """Seconds from the plug to: the device at gpsd, a fix in status, fixes acknowledged and status OK."""
        started = time.monotonic()
        self.machine.replug()
        tty, _ = self.check_device(agent)
        device_s = time.monotonic() - started

        def fix():
            _, status = self.status(agent)
            return str((status.get("last_sample") or {}).get("state", "")).startswith("fix_")
        wait_for("a fix in status after the plug", 120, fix)
        fix_s = time.monotonic() - started
        self.wait_acknowledged(agent, 120)
        return tty, {"device_s": round(device_s, 1), "fix_s": round(fix_s, 1), "acknowledged_ok_s": round(time.monotonic() - started, 1)}

    def unplug(self, agent):
        before = len(self.received())
        started = time.monotonic()
        self.machine.unplug()
        status, status_s = self.wait_no_receiver(agent, before, "", 30, 90)
        return status_s, time.monotonic() - started, status

    def wait_no_receiver(self, agent, before, when, status_bound, sent_bound):
        """Status says no receiver, then D_NOT_AVAILABLE entries (after the first `before`) reach the
        local agrirouter: the status, and seconds to it."""
        def no_receiver():
            _, status = self.status(agent)
            sample = status.get("last_sample") or {}
            return status if str(sample.get("state", "")).startswith("no_receiver") else None
        status, status_s = wait_for(f"status says no receiver{when}", status_bound, no_receiver)
        wait_for(f"D_NOT_AVAILABLE received by the local agrirouter{when}", sent_bound,
                 lambda: self.entries_since(before, lambda e: e["status"] == "dNotAvailable"))
        return status, status_s

    def watchdog(self, agent):
        pid, _ = self.service_ready(agent)
        watchdog = agent.check("systemctl show -p WatchdogUSec --value agrigps.service").strip()
        seconds = self.systemd_seconds(watchdog)
        agent.check(f"kill -STOP {pid}")
        started = time.monotonic()
        bound = seconds + 60

        def restarted():
            new_pid, _ = self.service_ready(agent, bound)
            return new_pid if new_pid != pid else None
        new_pid, _ = wait_for("systemd restarting the stalled daemon", bound, restarted, 1)
        elapsed = time.monotonic() - started
        journal = agent.check(f"journalctl -u agrigps.service --no-pager -o cat --since '-{int(elapsed) + 30}s'")
        if "atchdog timeout" not in journal:
            raise RigFailure(f"the journal does not say the watchdog fired:\n{journal[-1500:]}")
        return seconds, elapsed

    @staticmethod
    def systemd_seconds(text):
        total = 0.0
        for number, unit in re.findall(r"([\d.]+)\s*(min|ms|us|s)", text):
            total += float(number) * {"min": 60, "s": 1, "ms": 0.001, "us": 1e-6}[unit]
        if total <= 0:
            raise RigFailure(f"agrigps.service has no watchdog (WatchdogUSec={text})")
        return total

    def fsck_recovered(self, agent):
        """The initramfs ran fsck on the root file system, which replayed the journal."""
        code, output = agent.run("cat /run/initramfs/fsck.log", 10)
        if code != 0 or "/dev/vda" not in output:
            raise RigFailure(f"no fsck of /dev/vda in the initramfs after the power cut: {output[:500]}")
        if "recovering journal" not in output:
            raise RigFailure(f"fsck did not replay the journal after the power cut:\n{output[:1000]}")
        return output

    def power_cut(self, number, agent):
        pid, _ = self.service_ready(agent)
        wait_for("samples flowing", 120, lambda: len(self.committed()) > 0)
        delay = random.uniform(self.options.cut_after_min, self.options.cut_after_max)
        time.sleep(delay)
        self.machine.power_cut()
        cut = {"cut": number, "after_s": round(delay, 1)}
        agent = self.boot(self.receiver_port)
        fsck = self.fsck_recovered(agent)
        cut["fsck"] = next((line.strip() for line in fsck.splitlines() if "clean" in line or "recovering" in line), "")
        figures = self.expect_nothing_lost(agent, f"power cut {number}")
        self.service_ready(agent)
        tty, _ = self.check_device(agent)
        cut.update(figures)
        # What the boot that lost its power had committed, by the journal's copy.
        cut["committed_in_boot_cut"] = self.commits_in_boot(self.boots - 1)
        cut["boot_s"] = self.figures["boot_s"][-1]
        self.figures["cuts"].append(cut)
        return agent

    def cut_after_onboarding(self):
        """The power goes within a second of `agrigps onboard` returning, when the TAN is spent: the
        next boot finds the whole credential (the run then goes on to be acknowledged with it), never
        half of one."""
        self.machine.power_cut()
        agent = self.boot(None)
        self.fsck_recovered(agent)
        self.service_ready(agent)
        # Read through the heartbeat, which the daemon writes once it has loaded the credential.
        def onboarded():
            code, status = self.status(agent)
            return status if status.get("onboarded") and status.get("environment") == "local" else None
        status, _ = wait_for("status says onboarded after the cut", 60, onboarded, 1)
        problems = [reason for reason in status.get("reasons", []) if "endpoint" in reason or "credential" in reason]
        if problems:
            raise RigFailure(f"after a power cut right after onboarding, the credential is not whole: {problems}")
        self.figures["cut_after_onboarding"] = {"onboarded": True, "boot_s": self.figures["boot_s"][-1]}
        log("power cut right after onboarding: the next boot has the whole credential")
        return agent

    # MARK: The receiver on the CAN bus

    def bus_status(self, agent):
        _, status = self.status(agent)
        return status, str(status.get("receiver_bus") or "")

    def start_can_player(self, agent, log=CAN_LOG, loop=True, flood=0):
        """The tractor's bus (can1) up at 250 kbit/s and a recording playing on it, in a unit of its own."""
        agent.check("mountpoint -q /mnt/rig || (mkdir -p /mnt/rig && mount -o ro /dev/vdb /mnt/rig)")
        wait_for("can0 and can1 (the emulated kvaser_pci adapters)", 60,
                 lambda: agent.run("ip link show can0 && ip link show can1", 10)[0] == 0)
        agent.check("ip link set can1 down; ip link set can1 type can bitrate 250000 && ip link set can1 up")
        self.run_unit(agent, "rig-can-player", f"python3 /mnt/rig/can_player.py can1 /mnt/rig/{log}{' --loop' if loop else ''}"
                                               f"{f' --flood {flood}' if flood else ''}")

    @staticmethod
    def run_unit(agent, unit, command):
        """`command` in a transient unit of the guest's, in place of the one of that name before."""
        agent.check(f"systemctl stop {unit} 2>/dev/null; systemctl reset-failed {unit} 2>/dev/null; systemd-run --unit={unit} {command}")

    def expected_can_positions(self):
        with open(os.path.join(self.options.can_fixtures, CAN_POSITIONS)) as handle:
            return [(record["lat"], record["lon"]) for record in map(json.loads, handle) if "lat" in record]

    @staticmethod
    def cut_candump(lines, seconds):
        """A candump log's comments and its frames of the first `seconds` of the recording."""
        start = None
        for line in lines:
            match = re.match(r"\((\d+\.\d+)\) ", line)
            if match:
                start = float(match.group(1)) if start is None else start
                if float(match.group(1)) - start > seconds:
                    return
            yield line

    def can_strays(self, fixes):
        """The fixes at no position gpsd's expected output for the recording gives (to 1e-6 degrees)."""
        expected = self.expected_can_positions()
        return [e for e in fixes if not any(abs(e["lat"] - lat) <= 1e-6 and abs(e["lon"] - lon) <= 1e-6 for lat, lon in expected)]

    @staticmethod
    def guest_ms(agent):
        """The guest's clock, in the milliseconds of the entries' times."""
        return int(agent.check("date +%s%3N").strip())

    def can_fixes_received(self, since_ms, output="gps_info"):
        """Fixes sampled at or after `since_ms` (the guest's clock), judged by the time of the sample
        and not the order of arrival: a power cut can lose an acknowledgement, and that batch's
        samples (the USB receiver's, say) are sent again minutes later, after the switch."""
        return [e for e in self.received(output) if e["status"] not in NO_POSITION.values() and e["time_ms"] >= since_ms]

    def check_can_positions(self):
        """Every fix received since the switch to the bus, in both formats, is at a position gpsd's
        expected output for the recording gives."""
        counts = {}
        for output in ("gps_info", "time_log"):
            fixes = self.can_fixes_received(self.can_since_ms, output)
            strays = self.can_strays(fixes)
            if strays:
                raise RigFailure(f"{len(strays)} of {len(fixes)} bus fixes ({output}) are at positions gpsd's expected output does not give: {strays[:3]}")
            counts[output] = len(fixes)
        return counts

    def can_switch(self, agent):
        """The USB receiver goes and the daemon reads the receiver on the CAN bus: the package's
        agrigps-can@can0 brings can0 up at 250 kbit/s and hands it to gpsd; the receiver is found by its
        address; its fixes are those gpsd's expected output gives, acknowledged in both formats."""
        # The USB receiver goes first: every fix sampled from here on is the bus's.
        self.unplug(agent)
        since_ms = self.guest_ms(agent)
        # The rig's hardware: the adapters' driver loaded at every boot, as a box's own would be.
        agent.check("printf 'kvaser_pci\\ncan_raw\\n' > /etc/modules-load.d/rig-can.conf && modprobe -a kvaser_pci can_raw")
        agent.check("sed -i 's|^source = .*|source = \"nmea2000://can0\"|' /etc/agrigps/agrigps.conf && grep -q nmea2000://can0 /etc/agrigps/agrigps.conf")
        # The daemon reads the bus before the interface is up, as at a boot where the adapter comes late.
        agent.check("systemctl restart agrigps.service")
        self.start_can_player(agent)
        agent.check("systemctl enable --now agrigps-can@can0.service && sync")
        up = time.monotonic()
        details = agent.check("ip -details link show can0")
        if "bitrate 250000" not in details or "UP" not in details:
            raise RigFailure(f"agrigps-can@can0 did not bring can0 up at 250 kbit/s:\n{details}")
        devices = agent.run("bash <<'ASK'\nexec 3<>/dev/tcp/127.0.0.1/2947\nprintf '?DEVICES;\\n' >&3\ntimeout 2 cat <&3\nexit 0\nASK", 10)[1]
        _, line = wait_for("status naming the receiver at address 2", 90,
                           lambda: (lambda found: found if "receiver at address 2" in found[1] else None)(self.bus_status(agent)))[0]
        fixes, _ = wait_for("bus fixes received by the local agrirouter", 180, lambda: self.can_fixes_received(since_ms))
        acknowledged_s = time.monotonic() - up
        wait_for("bus fixes received as EFDI TimeLogs", 120, lambda: self.can_fixes_received(since_ms, "time_log"))
        status, _ = wait_for("agrigps status OK on the bus", 120, lambda: self.status_ok(agent))
        self.can_since_ms = since_ms
        self.check_can_positions()
        gpsd_devices = sorted(set(re.findall(r'nmea2000://[^"]+', devices)))
        log(f"CAN bus: {line}; gpsd's devices: {gpsd_devices}; {len(fixes)} fixes at gpsd's positions, "
            f"the first acknowledged {acknowledged_s:.1f} s after can0 came up")
        return {"bus_line": line, "first_acknowledged_s": round(acknowledged_s, 1), "fixes": len(fixes),
                "state": (status.get("last_sample") or {}).get("state")}

    def daemon_cpu(self, agent, seconds):
        """CPU seconds of agrigps run over `seconds`, and the frames can0 received meanwhile."""
        pid, _ = self.service_ready(agent)
        probe = f"awk '{{print $14 + $15}}' /proc/{pid}/stat; cat /sys/class/net/can0/statistics/rx_packets 2>/dev/null || echo 0"
        hertz = int(agent.check("getconf CLK_TCK").strip())
        ticks, frames = map(int, agent.check(probe).split())
        time.sleep(seconds)
        ticks_after, frames_after = map(int, agent.check(probe).split())
        return round((ticks_after - ticks) / hertz, 2), round((frames_after - frames) / seconds)

    def can_cpu(self, agent, seconds, usb_cpu):
        """The daemon's CPU reading the bus receiver, alone and beside 2,000 frames a second of other
        traffic, against the same on USB."""
        alone, rate = self.daemon_cpu(agent, seconds)
        self.start_can_player(agent, flood=2000)
        wait_for("bus fixes with the flood on", 60, lambda: str((self.bus_status(agent)[0].get("last_sample") or {}).get("state", "")).startswith("fix_"))
        flooded, flooded_rate = self.daemon_cpu(agent, seconds)
        # The machine's data on: the tractor's drive (50 frames a second the listener reads) beside the
        # same flood, against the run above that reads only the receiver's.
        self.start_tractor(agent, engine=False)
        tractor = self.tractor_named(agent)
        machine, machine_rate = self.daemon_cpu(agent, seconds)
        agent.check("systemctl stop rig-tractor")
        self.start_can_player(agent)
        ratio = round(machine / flooded, 2) if flooded else None
        log(f"agrigps run's CPU over {seconds} s: USB {usb_cpu[0]} s; CAN bus {alone} s at {rate} frames/s; "
            f"CAN bus {flooded} s at {flooded_rate} frames/s; with the tractor's data {machine} s at {machine_rate} frames/s ({ratio}x)")
        return {"seconds": seconds, "usb_cpu_s": usb_cpu[0], "can_cpu_s": alone, "can_frames_per_s": rate,
                "flooded_cpu_s": flooded, "flooded_frames_per_s": flooded_rate, "machine_cpu_s": machine,
                "machine_frames_per_s": machine_rate, "machine_ratio": ratio, "tractor_named_s": tractor["named_s"]}

    def can_replay(self, agent):
        """agrigps replay of gpsd's recording onto a virtual interface (vcan0): a sample a second of the
        recording's 215, each at a position gpsd's expected output gives, and exit 0 at its end. At the
        recorded pace: at 250 frames a second, beside CI's test suites, gpsd's sockets fell behind
        (131 of 208 seconds in one run, and a copy more than 30 receiver seconds late)."""
        agent.check("modprobe vcan && (ip link show vcan0 >/dev/null 2>&1 || ip link add vcan0 type vcan) && ip link set vcan0 up")
        # The short form replays the recording's first minutes only (--can-replay-seconds), and holds
        # them to the same shares: 150 of 215 seconds with fixes, the daemon a sixth.
        recording = CAN_REPLAY_CUT if self.options.can_replay_seconds else CAN_LOG
        span = self.options.can_replay_seconds or CAN_LOG_SECONDS
        started = time.monotonic()
        code, output = agent.run(f"agrigps replay --json --real-time /mnt/rig/{recording}", span + 120)
        seconds = time.monotonic() - started
        samples = []
        for line in output.splitlines():
            if line.startswith("{"):
                samples.append(json.loads(line))
        fixes = [s for s in samples if s.get("lat") is not None]
        strays = self.can_strays(fixes)
        times = [s["time"] for s in samples if s.get("time")]
        backwards = sum(1 for earlier, later in zip(times, times[1:]) if later < earlier)
        seconds_covered = len({t[:19] for t in times})
        needed = int(span * 150 / CAN_LOG_SECONDS)
        if code != 0 or len(fixes) < needed or seconds_covered < needed or strays or backwards:
            raise RigFailure(f"agrigps replay of {recording} (exit {code}): {len(samples)} samples, {len(fixes)} fixes, "
                             f"{len(strays)} at positions gpsd does not give {strays[:2]}, {backwards} going back in time, {seconds_covered} seconds of the recording's {span}:\n{output[-1500:]}")
        states = sorted({s["state"] for s in samples})
        # The daemon on the same recording, into a spool of its own (not onboarded: it only samples).
        # At the fast pace, which loses seconds on a loaded machine (137 of 208 beside CI's test
        # suites once, 92 another time, 207 when idle): the recorded pace is held to 150 above,
        # this only to a daemon that samples the bus at all, a sixth of the recording.
        code, run_output = agent.run(f"agrigps run --replay /mnt/rig/{recording} --state-dir /tmp/rig-run-replay", 120)
        taken = re.search(r"agrigps: (\d+) samples taken", run_output)
        if code != 0 or not taken or int(taken.group(1)) < span // 6:
            raise RigFailure(f"agrigps run --replay of {recording} (exit {code}):\n{run_output[-1500:]}")
        log(f"agrigps replay onto vcan0: {len(samples)} samples ({len(fixes)} fixes, states {states}, {seconds_covered} distinct seconds) "
            f"in {seconds:.1f} s, exit 0; "
            f"agrigps run --replay: {taken.group(1)} samples taken")
        return {"samples": len(samples), "fixes": len(fixes), "seconds": round(seconds, 1), "states": states,
                "run_replay_samples": int(taken.group(1))}

    def can_interface_down_and_up(self, agent):
        """can0 down: status says no receiver and D_NOT_AVAILABLE is sent; up again: a fix."""
        before = len(self.received())
        agent.check("ip link set can0 down")
        started = time.monotonic()
        status, status_s = self.wait_no_receiver(agent, before, " with can0 down", 60, 120)
        line = str(status.get("receiver_bus") or "")
        sent_s = time.monotonic() - started
        after_down = self.guest_ms(agent)
        agent.check("ip link set can0 up")
        up = time.monotonic()

        def fix():
            status, _ = self.bus_status(agent)
            return str((status.get("last_sample") or {}).get("state", "")).startswith("fix_")
        wait_for("a fix in status with can0 up again", 90, fix)
        fix_s = time.monotonic() - up
        wait_for("bus fixes received after can0 came back", 120, lambda: self.can_fixes_received(after_down))
        log(f"can0 down: status no receiver in {status_s:.1f} s ({line}), D_NOT_AVAILABLE received in {sent_s:.1f} s; "
            f"up again: a fix in {fix_s:.1f} s, acknowledged in {time.monotonic() - up:.1f} s")
        return {"status_no_receiver_s": round(status_s, 1), "d_not_available_s": round(sent_s, 1), "fix_after_up_s": round(fix_s, 1)}

    def can_power_cut(self, agent):
        """One power cut while the bus receiver is read and the tractor drives beside it (the cut comes
        after the first headland, mid-drive): nothing lost, and after the boot the package's unit
        brings can0 back to gpsd by itself. The tractor's drive after the boot is followed to its end."""
        committed = len(self.committed())
        wait_for("samples flowing from the bus", 60, lambda: len(self.committed()) > committed)
        self.start_tractor(agent, engine=True)
        tractor = self.tractor_named(agent)
        wait_for("the tractor's first headland (hitch out of work)", 180,
                 lambda: any(kind == "hitch out of work" for _, kind, _ in self.tractor_events()), 1)
        # At least 5 s after the headland, so its change has samples on both sides before the power goes.
        delay = random.uniform(max(5.0, self.options.cut_after_min), max(5.0, self.options.cut_after_max))
        time.sleep(delay)
        cut_boot = self.boots
        self.machine.power_cut()
        agent = self.boot(None)
        self.fsck_recovered(agent)
        figures = self.expect_nothing_lost(agent, "power cut on the CAN bus")
        self.service_ready(agent)
        booted_ms = self.guest_ms(agent)
        self.start_can_player(agent)
        self.start_tractor(agent, engine=False)
        wait_for("agrigps-can@can0 active after the boot", 60, lambda: agent.run("systemctl is-active agrigps-can@can0.service", 10)[0] == 0)
        wait_for("bus fixes received after the power cut", 180, lambda: self.can_fixes_received(booted_ms))
        stopped, _ = wait_for("the tractor's drive after the boot to its end", 180,
                              lambda: next((at for boot, kind, at in self.tractor_events() if boot == self.boots and kind == "standing"), None), 1)
        wait_for("TimeLogs received to the end of that drive", 120,
                 lambda: any(e["time_ms"] >= stopped + 3000 and "141" in (e.get("values") or {}) for e in self.received("time_log")), 2)
        work = self.check_work_state(cut_boot)
        return agent, {"after_s": round(delay, 1), "lost": figures["lost"], "committed": figures["committed"], "tractor": tractor, "work": work}

    # MARK: The tractor

    def start_tractor(self, agent, engine):
        """A tractor on can1 beside the receiver's recording (can_player.py --tractor): the JD's engine
        first if `engine`, then its drive, again and again. Started after the receiver's player, which
        brings can1 up."""
        played = f"/mnt/rig/{TRACTOR_ENGINE_LOG} " if engine else ""
        self.run_unit(agent, "rig-tractor", f"python3 /mnt/rig/can_player.py can1 {played}--tractor --loop")

    def tractor_named(self, agent):
        """Status names the tractor ECU at its address, in JSON and in words."""
        def named():
            _, status = self.status(agent)
            machine = status.get("machine") or {}
            return machine if machine.get("tractor_ecu") == TRACTOR_ECU_ADDRESS else None
        machine, seconds = wait_for(f"status naming the tractor ECU at {TRACTOR_ECU_ADDRESS}", 120, named, 1)
        line = next((text for text in agent.check("runuser -u field -- agrigps status").splitlines() if text.startswith("Machine:")), "")
        if f"tractor ECU at {TRACTOR_ECU_ADDRESS}" not in line:
            raise RigFailure(f"agrigps status does not name the tractor ECU at {TRACTOR_ECU_ADDRESS}: {line!r}")
        log(f"tractor on the bus: status named it in {seconds:.1f} s: {line}")
        return {"named_s": round(seconds, 1), "engine": machine.get("engine"), "line": line}

    def tractor_events(self):
        """What the tractor's player printed, from the journal's copy of each boot: (boot, kind, guest ms)."""
        return [(boot, match.group(1), round(float(match.group(2)) * 1000)) for boot, match in self.journal_matches(TRACTOR_EVENT)]

    @staticmethod
    def work_transitions(entries):
        """Where DDI 141 changes between 0 and 1 from one Time to the next (at most 3 s apart): (time
        of the last Time before, time of the first after, the new value)."""
        known = sorted((e["time_ms"], e["values"]["141"]) for e in entries if (e.get("values") or {}).get("141") in (0, 1))
        return [(before, after, value) for (before, old), (after, value) in zip(known, known[1:]) if value != old and after - before <= 3000]

    @staticmethod
    def matched_work(events, transitions, sample_ms=1000, fix_age_ms=2500):
        """Each hitch change matched to the TimeLogs' change to its state: the first Time of the new
        state is the first sample after the change, so it is dated at most one sample after it, and
        the last Time of the old state before it. A sample's time is its fix's, which in the rig's
        emulated machine is up to 1.5 s older than the sample (gpsd's and the daemon's latency), so
        the first new Time may be dated up to `fix_age_ms` before the change. Returns the offsets (ms,
        first new Time less the change) and the transitions no change explains."""
        offsets, unexplained = [], list(transitions)
        for at, value in events:
            match = next((t for t in unexplained if t[2] == value and t[0] - sample_ms <= at <= t[1] + fix_age_ms
                          and t[1] - at <= sample_ms + 1000), None)
            if match is None:
                return None, at, unexplained
            unexplained.remove(match)
            offsets.append(match[1] - at)
        return offsets, None, unexplained

    @staticmethod
    def stray_work(unexplained, changes, first, last, sample_ms=1000, fix_age_ms=2500):
        """The transitions between `first` and `last` that no hitch change explains. A change the
        samples do not span on both sides (one just before a power cut) is not matched above, but
        its transition, one sample after it, is still its own, not a stray."""
        return [t for t in unexplained if first <= t[1] <= last
                and not any(value == t[2] and t[0] - sample_ms <= at <= t[1] + fix_age_ms for at, value in changes)]

    def check_work_state(self, cut_boot):
        """The TimeLogs' work state (DDI 141) changes where the tractor's hitch changed, within one
        sample, before and after the cut; no change without a hitch change; the effective total time
        (DDI 119) never falls, across the cut too."""
        received = self.received("time_log")
        transitions = self.work_transitions(received)
        known = [e["time_ms"] for e in received if (e.get("values") or {}).get("141") in (0, 1)]
        events = []
        for boot, kind, at in self.tractor_events():
            if not kind.startswith("hitch"):
                continue
            # A change the samples span on both sides: one just before the cut has no sample after it.
            if any(at - 2000 <= t <= at for t in known) and any(at + 2000 <= t <= at + 4000 for t in known):
                events.append((boot, at, 1 if kind == "hitch in work" else 0))
        by_boot = {boot: sum(1 for b, _, _ in events if b == boot) for boot in (cut_boot, self.boots)}
        if by_boot[cut_boot] < 2 or by_boot[self.boots] < 4:
            raise RigFailure(f"too few hitch changes with TimeLogs around them: {by_boot} (boot of the cut, boot after); "
                             f"events {self.tractor_events()}")
        offsets, missed, unexplained = self.matched_work([(at, value) for _, at, value in events], transitions)
        if offsets is None:
            raise RigFailure(f"no change of DDI 141 within one sample of the hitch change at {missed} ms; TimeLog changes: {transitions}")
        first, last = min(at for _, at, _ in events) - 5000, max(at for _, at, _ in events) + 5000
        changes = [(at, 1 if kind == "hitch in work" else 0) for _, kind, at in self.tractor_events() if kind.startswith("hitch")]
        strays = self.stray_work(unexplained, changes, first, last)
        if strays:
            raise RigFailure(f"DDI 141 changed where the hitch did not: {strays}")
        totals = [e["values"]["119"] for e in sorted(received, key=lambda e: e["time_ms"]) if "119" in (e.get("values") or {})]
        falls = [(a, b) for a, b in zip(totals, totals[1:]) if b < a]
        if falls or not totals:
            raise RigFailure(f"DDI 119 (effective total time) fell or never came: {falls[:5]} of {len(totals)}")
        log(f"tractor: {len(events)} hitch changes ({by_boot[cut_boot]} before the cut, {by_boot[self.boots]} after), each in the "
            f"TimeLogs' DDI 141 {min(offsets)} to {max(offsets)} ms after it; DDI 119 rose to {totals[-1]} s and never fell")
        return {"changes": len(events), "offset_ms": [min(offsets), max(offsets)], "effective_s": totals[-1]}

    def can_finder(self, agent):
        """agrigps bus on the live bus: canboat's power-up gives the GPS at address 0 though its first
        frames come from 1 and 35; canboat's 129025-only bus says what is missing."""
        found = {}
        for name, log_name in (("first_sender", CAN_FIRST_SENDER_LOG), ("no_fix_data", CAN_NO_FIX_DATA_LOG)):
            self.start_can_player(agent, log_name, loop=True)
            code, output = agent.run("runuser -u field -- agrigps bus can0 --seconds 8 --json", 30)
            try:
                report = json.loads(output.strip().splitlines()[-1])
            except (ValueError, IndexError):
                raise RigFailure(f"agrigps bus can0 (exit {code}): {output[-1500:]}")
            found[name] = report
        if found["first_sender"].get("chosen") != 0:
            raise RigFailure(f"on canboat's power-up, agrigps bus chose {found['first_sender'].get('chosen')}, not the GPS at 0: "
                             f"{found['first_sender'].get('summary')}")
        summary = found["no_fix_data"].get("summary", "")
        if "129029" not in summary or "129539" not in summary:
            raise RigFailure(f"on canboat's 129025-only bus, agrigps bus does not say what is missing: {summary}")
        log(f"agrigps bus can0: power-up {found['first_sender'].get('summary')}; 129025 only: {summary}")
        self.start_can_player(agent)
        return {name: report.get("summary") for name, report in found.items()}

    def purge(self, agent):
        agent.check("DEBIAN_FRONTEND=noninteractive apt-get purge -y agrigps", timeout=120)
        output = agent.check(f"ls -A {STATE_DIR}")
        for name in ("spool.sqlite", "endpoint-id"):
            if name not in output.split():
                raise RigFailure(f"apt purge removed {STATE_DIR}/{name}: left {output.split()}")
        return output.split()

    # MARK: An upgrade with data on the box

    def unit_pid(self, agent, unit):
        return int(agent.check(f"systemctl show -p MainPID --value {unit}").strip() or 0)

    def kept_files(self, agent):
        """What an upgrade must keep, by checksum: the configuration and the credential."""
        names = ["/etc/agrigps/agrigps.conf"] + [f"{STATE_DIR}/{name}" for name in ("endpoint-id", "endpoint.json", "endpoint.secret")]
        output = agent.check("sha256sum " + " ".join(names))
        return dict(reversed(line.split(None, 1)) for line in output.splitlines() if line.strip())

    def spool_rows(self, agent, where="1"):
        """Rows in the spool, whatever its schema (the older package's has no batch table)."""
        return int(agent.check(f"sqlite3 -readonly {STATE_DIR}/spool.sqlite \"SELECT COUNT(*) FROM sample WHERE {where};\"").strip())

    def spool_steps(self, agent):
        return agent.check(f"sqlite3 -readonly {STATE_DIR}/spool.sqlite 'SELECT identifier FROM grdb_migrations;'").split()

    def upgrade(self, agent, backlog=40):
        """The older package, onboarded and sharing, its spool filled while agrirouter cannot be
        reached; this package installed over it. The spool's schema migrates, the configuration
        and credential stay as they were, both units restart with the new binary, and every sample
        arrives once. Then a spool marked by a newer agrigps: the unit refuses it with words and
        is not restarted in a loop."""
        figures = {"from": agent.check("agrigps --version").strip()}
        steps_before = self.spool_steps(agent)
        agent.check(f"ip route add unreachable {HOST_FROM_GUEST}/32")
        code, route = agent.run(f"ip route get {HOST_FROM_GUEST} 2>&1")
        if code == 0 and "unreachable" not in route:
            raise RigFailure(f"agrirouter still routed after ip route add unreachable: {route}")
        log(f"{figures['from']} running, schema steps {steps_before}; agrirouter unreachable: {route.strip()}")
        started = time.monotonic()
        # Pending, not sent: only a spool that cannot reach agrirouter keeps them.
        wait_for(f"{backlog} samples pending in the spool while agrirouter is unreachable", 300,
                 lambda: self.spool_rows(agent, "delivery = 'pending'") >= backlog, 2)
        figures["backlog"] = self.spool_rows(agent)
        figures["offline_s"] = round(time.monotonic() - started, 1)
        log(f"{figures['backlog']} samples in the spool after {figures['offline_s']} s offline; installing {os.path.basename(self.options.deb)}")
        # An integrator's own setting: dpkg keeps a changed conffile (told to, as unattended upgrades are).
        agent.check("printf '\\n# set by the integrator before the upgrade\\n' >> /etc/agrigps/agrigps.conf")
        kept = self.kept_files(agent)
        pids = {unit: self.unit_pid(agent, unit) for unit in ("agrigps.service", "agrigps-web.service")}
        figures["install_s"] = self.apt_install(agent, self.options.deb)
        figures["to"] = agent.check("agrigps --version").strip()
        if figures["to"] == figures["from"]:
            raise RigFailure(f"the package over {figures['from']} is the same version: apt would not replace it")
        self.service_ready(agent)
        for unit, pid in pids.items():
            def replaced():
                now = self.unit_pid(agent, unit)
                return now if now not in (0, pid) else None
            new, _ = wait_for(f"{unit} restarted", 60, replaced)
            binary = agent.check(f"readlink /proc/{new}/exe").strip()
            if "(deleted)" in binary:
                raise RigFailure(f"{unit} runs the replaced binary: {binary}")
        if self.kept_files(agent) != kept:
            raise RigFailure(f"the upgrade changed what it must keep: before {kept}, after {self.kept_files(agent)}")
        steps = self.spool_steps(agent)
        added = [step for step in steps if step not in steps_before]
        if not set(steps_before) <= set(steps):
            raise RigFailure(f"schema steps gone after the upgrade: before {steps_before}, after {steps}")
        figures["schema_steps_added"] = added
        if self.spool_rows(agent) < figures["backlog"]:
            raise RigFailure(f"the backlog shrank while agrirouter was unreachable: {figures['backlog']} before, {self.spool_rows(agent)} after")
        log(f"{figures['to']} running both units after {figures['install_s']} s, configuration and credential kept, "
            f"schema steps added {added}; agrirouter reachable again")
        # Samples keep coming, each pending until its cycle: the backlog is what was there by now.
        mark = max(self.spooled(agent), default=0)
        agent.check(f"ip route del unreachable {HOST_FROM_GUEST}/32")
        started = time.monotonic()
        wait_for("the backlog acknowledged in every output", 400,
                 lambda: all(state == "acknowledged" for row, state in self.spooled(agent).items() if row <= mark) or None, 3)
        self.wait_acknowledged(agent, 120)
        figures["drained_s"] = round(time.monotonic() - started, 1)
        figures.update(self.expect_nothing_lost(agent, "after the upgrade"))
        figures["refused_newer_spool"] = self.newer_spool_refused(agent)
        return figures

    def newer_spool_refused(self, agent):
        """A spool a newer agrigps has migrated: the daemon says so and exits 78, which the unit does
        not restart; with the mark gone it starts again."""
        agent.check("systemctl stop agrigps.service")
        mark = "INSERT INTO grdb_migrations VALUES ('v99-from-a-newer-agrigps');"
        agent.check(f"runuser -u agrigps -- sqlite3 {STATE_DIR}/spool.sqlite \"{mark}\"")
        agent.check("systemctl reset-failed agrigps.service; systemctl start agrigps.service || true")

        def failed():
            output = agent.run("systemctl show -p ActiveState -p ExecMainStatus -p NRestarts agrigps.service", 10)[1]
            values = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
            return values if values.get("ActiveState") == "failed" else None
        values, _ = wait_for("agrigps.service failed on the newer spool", 60, failed)
        time.sleep(8)  # longer than RestartSec: a restart would show
        again = failed()
        journal = agent.check("journalctl -u agrigps.service --no-pager -o cat -n 20")
        if values.get("ExecMainStatus") != "78" or again is None or again.get("NRestarts") != values.get("NRestarts"):
            raise RigFailure(f"a newer spool: the unit should fail with 78 and stay stopped: {values}, then {again}")
        words = next((line for line in journal.splitlines() if "newer" in line), None)
        if words is None:
            raise RigFailure(f"a newer spool: the journal does not say why:\n{journal[-1500:]}")
        agent.check(f"runuser -u agrigps -- sqlite3 {STATE_DIR}/spool.sqlite \"DELETE FROM grdb_migrations WHERE identifier = 'v99-from-a-newer-agrigps';\"")
        agent.check("systemctl reset-failed agrigps.service && systemctl start agrigps.service")
        self.service_ready(agent)
        return words.strip()[:300]

    def start_guest(self):
        """The local agrirouter, the transfer disk, a fresh copy of the image and the receiver; then
        the first boot, whose agent is returned."""
        ca = self.start_sim()
        self.make_transfer_disk(ca)
        subprocess.run(["cp", "--sparse=always", os.path.join(self.image, "root.raw"), self.disk], check=True)
        self.receiver.start()
        return self.boot(None)

    def run_upgrade(self):
        started = time.monotonic()
        agent = self.start_guest()
        self.install(agent, self.options.upgrade_from)
        self.service_ready(agent)
        tty, plug = self.plug_and_fix(agent)
        log(f"{os.path.basename(self.options.upgrade_from)}: receiver at {tty}, fixes acknowledged in {plug['acknowledged_ok_s']} s")
        figures = self.upgrade(agent)
        self.figures["upgrade"] = figures
        log(f"upgrade {figures['from']} -> {figures['to']} over {figures['backlog']} samples spooled offline: installed in "
            f"{figures['install_s']} s, schema steps added {figures['schema_steps_added']}, drained in {figures['drained_s']} s; "
            f"received twice {figures['duplicates']}; a newer spool: {figures['refused_newer_spool']}")
        self.machine.shut_down()
        self.figures["total_s"] = round(time.monotonic() - started, 1)
        self.figures["totals"] = self.final_totals()
        return self.figures

    # MARK: The run

    def run(self):
        options = self.options
        log(f"working in {self.work}")
        started = time.monotonic()
        agent = self.start_guest()
        self.install(agent)
        agent = self.cut_after_onboarding()
        self.service_ready(agent)

        tty, plug = self.plug_and_fix(agent)
        self.figures["first_plug"] = plug
        log(f"receiver plugged as {tty}: /dev/agrigps-gnss and gpsd in {plug['device_s']} s, a fix in {plug['fix_s']} s, "
            f"fixes acknowledged and status OK in {plug['acknowledged_ok_s']} s")
        lines = self.check_journal(agent)
        log(f"journal: {lines} lines from agrigps.service")
        self.expect_nothing_lost(agent, "after the first fixes")

        status_s, entries_s, _ = self.unplug(agent)
        self.figures["unplug"] = {"status_no_receiver_s": round(status_s, 1), "d_not_available_received_s": round(entries_s, 1)}
        log(f"unplugged: status says no receiver in {status_s:.1f} s; D_NOT_AVAILABLE at the local agrirouter in {entries_s:.1f} s")
        time.sleep(3)
        tty, plug = self.plug_and_fix(agent)
        self.figures["replug"] = plug
        log(f"replugged as {tty}: device at gpsd in {plug['device_s']} s, a fix in {plug['fix_s']} s, "
            f"fixes acknowledged and status OK in {plug['acknowledged_ok_s']} s")

        watchdog_s, restart_s = self.watchdog(agent)
        self.figures["watchdog"] = {"watchdog_sec": watchdog_s, "restart_s": round(restart_s, 1)}
        log(f"watchdog: daemon stopped with SIGSTOP, restarted by systemd after {restart_s:.1f} s (WatchdogSec={watchdog_s:g})")
        self.wait_acknowledged(agent, 120)
        self.expect_nothing_lost(agent, "after the watchdog restart")

        for number in range(1, options.power_cuts + 1):
            agent = self.power_cut(number, agent)
        if options.power_cuts:
            self.wait_acknowledged(agent, 180)

        usb_cpu = self.daemon_cpu(agent, options.can_cpu_seconds) if options.can_cpu_seconds else None
        self.figures["can"] = self.can_switch(agent)
        if usb_cpu:
            self.figures["can"]["cpu"] = self.can_cpu(agent, options.can_cpu_seconds, usb_cpu)
        self.figures["can"]["finder"] = self.can_finder(agent)
        self.figures["can"]["replay"] = self.can_replay(agent)
        self.figures["can"]["down_up"] = self.can_interface_down_and_up(agent)
        agent, self.figures["can"]["power_cut"] = self.can_power_cut(agent)
        self.expect_nothing_lost(agent, "on the CAN bus")
        self.figures["can"]["fixes_received"] = self.check_can_positions()
        log(f"CAN bus: every fix received since the switch at a position of gpsd's: {self.figures['can']['fixes_received']}")

        kept = self.purge(agent)
        log(f"apt purge: {STATE_DIR} kept ({', '.join(kept)})")
        self.machine.shut_down()
        self.figures["total_s"] = round(time.monotonic() - started, 1)
        self.figures["totals"] = self.final_totals()
        return self.figures

    def final_totals(self):
        committed = self.committed()
        return {"committed": len(committed), "received": len(self.received()), "received_efdi": len(self.received("time_log"))}

    def stop(self):
        if self.machine is not None and self.machine.process.poll() is None:
            self.machine.process.kill()
            self.machine.process.wait(timeout=30)
        if self.sim is not None and self.sim.poll() is None:
            self.sim.terminate()
            try:
                self.sim.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.sim.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", required=True, help="the directory rig/build-image printed")
    parser.add_argument("--deb", required=True, help="the agrigps package to install in the guest")
    parser.add_argument("--sim", required=True, help="the agrirouter-sim program")
    parser.add_argument("--nmea", required=True, help="the recorded NMEA log the receiver plays, round and round")
    parser.add_argument("--can-fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "can"),
                        help="the CAN recordings (default: the repository's Fixtures/can)")
    parser.add_argument("--can-cpu-seconds", type=int, default=0,
                        help="measure the daemon's CPU this long on USB, on the bus, and on a bus with 2,000 frames/s of other traffic (default 0: not measured)")
    parser.add_argument("--upgrade-from", help="instead of the usual run: install this older package, fill its spool offline, "
                        "then install --deb over it (see Rig.upgrade)")
    parser.add_argument("--power-cuts", type=int, default=1, help="how many times the power goes (default 1)")
    parser.add_argument("--cut-after-min", type=float, default=3.0, help="earliest cut, seconds after the checks of a boot")
    parser.add_argument("--cut-after-max", type=float, default=25.0, help="latest cut, seconds after the checks of a boot")
    parser.add_argument("--can-replay-seconds", type=int, default=0,
                        help="replay only this many seconds of the CAN recording (default 0: all of its 215)")
    parser.add_argument("--watchdog-sec", type=int, default=0,
                        help="the service's WatchdogSec in the guest, by a drop-in (default 0: the unit's own)")
    parser.add_argument("--boot-bound", type=float, default=300.0, help="longest wait for a boot to reach multi-user")
    parser.add_argument("--seed", type=int, default=None, help="for the random cut times (default: from the clock)")
    parser.add_argument("--figures", help="write the measured figures to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs, disk image)")
    options = parser.parse_args()
    if not 0 <= options.can_cpu_seconds <= 3600:
        parser.error("--can-cpu-seconds: 0 to 3600")
    if not (options.can_replay_seconds == 0 or 30 <= options.can_replay_seconds <= CAN_LOG_SECONDS):
        parser.error(f"--can-replay-seconds: 0, or 30 to {CAN_LOG_SECONDS}")
    if not (options.watchdog_sec == 0 or 10 <= options.watchdog_sec <= 600):
        parser.error("--watchdog-sec: 0, or 10 to 600")
    if not 0 <= options.power_cuts <= 1000:
        parser.error("--power-cuts: 0 to 1000")
    if not 0 <= options.cut_after_min <= options.cut_after_max <= 3600:
        parser.error("--cut-after-min and --cut-after-max: 0 <= min <= max <= 3600 seconds")
    seed = options.seed if options.seed is not None else int(time.time())
    random.seed(seed)
    log(f"random seed {seed}")

    rig = Rig(options)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        figures = rig.run_upgrade() if options.upgrade_from else rig.run()
        figures["seed"] = seed
        text = json.dumps(figures, indent=2)
        print(text)
        if options.figures:
            with open(options.figures, "w") as handle:
                handle.write(text + "\n")
        log("passed")
        return 0
    except RigFailure as failure:
        log(f"FAILED: {failure}")
        log(f"logs kept in {rig.work}")
        options.keep = True
        return 1
    finally:
        rig.stop()
        if not options.keep:
            shutil.rmtree(rig.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
