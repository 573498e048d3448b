#!/usr/bin/env python3
"""The command line under mutated input: configuration files through `agrigps status` and
`agrigps others`, NMEA logs through `agrigps replay`. Every case must end within its time limit, with
an exit code the command documents, and print no raw control character; a crash (a signal, or
Swift's "Fatal error") or a hang fails the run. The failing case is kept in --keep.

    script/fuzz-cli.py --binary .build/debug/agrigps --cases 300 --seed 1
"""
import argparse, os, random, shutil, subprocess, sys, tempfile, time

INTERESTING = [b"\x00", b"\x10,", b"\x1b[2J", b"\n", b"\r", b"\xff", b"\xb5\x62", b"[[[", b"=", b'"', b"'''",
               b"1e-10", b"inf", b"nan", b"1e308", b"-1e308", b"0x7fffffffffffffff", b"99999999999999999999", b"$GPGGA,",
               b"*00", b",,,,,,", b"\xc3\x28"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(out))
        kind = rng.randrange(6)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[at:at] = rng.choice(INTERESTING)
        elif kind == 2 and out:
            del out[at:at + rng.randint(1, 64)]
        elif kind == 3 and out:
            out[at:at] = out[at:at + rng.randint(1, 128)]
        elif kind == 4:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            # A number in the text swapped for an extreme one.
            digits = [i for i, b in enumerate(out) if 0x30 <= b <= 0x39]
            if digits:
                i = rng.choice(digits)
                out[i:i + 1] = rng.choice([b"1e308", b"-1e300", b"99999999999", b"nan", b"inf", b"-0"])
    return bytes(out)


def run(command, timeout):
    started = time.monotonic()
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        return None, (expired.stdout or b"") + (expired.stderr or b""), time.monotonic() - started
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def verdict(code, output, allowed):
    if code is None:
        return "hang"
    if code < 0 or code >= 128 or b"Fatal error" in output or b"Program crashed" in output:
        return f"crash (exit {code})"
    if code not in allowed:
        return f"exit {code}, not one of {sorted(allowed)}"
    if b"\x1b" in output or b"\x00" in output:
        return "a raw control character in the output"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "agrigps-fuzz-cli-failures"))
    arguments = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rng = random.Random(arguments.seed)
    config = open(os.path.join(root, "config", "agrigps.conf"), "rb").read()
    logs = [open(os.path.join(root, "Fixtures", "nmea", name), "rb").read()
            for name in sorted(os.listdir(os.path.join(root, "Fixtures", "nmea"))) if name.endswith(".log")]
    corpus = os.path.join(root, "Fixtures", "hostile")
    seeds = {kind: [open(os.path.join(corpus, kind, name), "rb").read() for name in sorted(os.listdir(os.path.join(corpus, kind)))]
             for kind in ("config", "logs")}
    work = tempfile.mkdtemp(prefix="agrigps-fuzz-cli-")
    failures, counts, started = [], {"configuration": 0, "replay": 0}, time.monotonic()
    try:
        for index in range(arguments.cases):
            path = os.path.join(work, f"case-{index}")
            # Two configuration cases for every replay: a replay costs a private gpsd.
            if index % 3 != 2:
                counts["configuration"] += 1
                # The corpus first, as it is; then mutations of it and of the example configuration.
                if index // 3 < len(seeds["config"]) and index % 3 == 0:
                    data = seeds["config"][index // 3]
                else:
                    data = mutate(rng.choice(seeds["config"] + [config] * 4), rng)
                with open(path, "wb") as file:
                    file.write(data)
                command = [arguments.binary, rng.choice(["status", "others"]), "--config", path, "--state-dir", work + "/state"]
                allowed = {0, 1, 2, 3} if command[1] == "status" else {0, 78}
                code, output, _ = run(command, timeout=20)
            else:
                counts["replay"] += 1
                if index // 3 < len(seeds["logs"]):
                    data = seeds["logs"][index // 3]
                    with open(path, "wb") as file:
                        file.write(data)
                    code, output, _ = run([arguments.binary, "replay", path, "--json"], timeout=60)
                    problem = verdict(code, output, {0, 65, 70})
                    if problem:
                        failures.append(f"replay corpus {index // 3}: {problem}: {output[-300:]!r}")
                log = rng.choice(logs)
                # Mutate one stretch of the log, so most of it is still a drive gpsd can follow.
                start = rng.randrange(max(1, len(log) - 2000))
                data = log[:start] + mutate(log[start:start + 2000], rng) + log[start + 2000:]
                with open(path, "wb") as file:
                    file.write(data)
                command = [arguments.binary, "replay", path, "--json"]
                code, output, _ = run(command, timeout=60)
                allowed = {0, 65, 70}
            problem = verdict(code, output, allowed)
            if problem:
                os.makedirs(arguments.keep, exist_ok=True)
                kept = os.path.join(arguments.keep, os.path.basename(path))
                shutil.copy(path, kept)
                failures.append(f"{' '.join(command[1:2])} {kept}: {problem}: {output[-300:]!r}")
            os.unlink(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    crashes = sum("crash" in f for f in failures)
    hangs = sum("hang" in f for f in failures)
    print(f"fuzz-cli: seed {arguments.seed}, {arguments.cases} cases in {seconds:.1f} s "
          f"({counts['configuration']} configuration files, {counts['replay']} replay logs): "
          f"{crashes} crashes, {hangs} hangs, {len(failures) - crashes - hangs} other findings")
    for failure in failures[:20]:
        print("  finding: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
