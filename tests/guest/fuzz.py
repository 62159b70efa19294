#!/usr/bin/env python3
"""fuzz.py - in the guest: load the storms with random parameters.

    fuzz.py --ko DIR --seed N --loads N [--only I] [--out FILE]

Every load picks a storm, a random parameter set (valid values, bounds
and one past them, overflowing numbers, garbage strings, malformed CPU
lists, every flag) and one way to end it: insmod waited for (killed after
a few seconds), a fatal signal to insmod mid-storm, or background=1 with
an rmmod at a random moment, an rmmod tried during a foreground storm.
After each load the module is unloaded and the kernel log it added is
checked: a refused load (insmod failed) says why in a line of its own; a
load that succeeded ends with "End of test" (or, unloaded before its
report, says so); nothing in the log looks like a kernel problem.

Load I of seed N is the same wherever it runs: --only I replays it.
Prints one line per problem and a summary; writes the figures as JSON to
--out. Exit status 1 if any load broke a rule.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import time

# the registry of storms (its module needs nothing but the standard library)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
from stormsuite import storms  # noqa: E402
from stormsuite.lkp import modparams  # noqa: E402

# Lines that show a kernel problem (the host's stormsuite.runfiles.dmesg is the
# reference; the guest may not have the suite's Python path).
PROBLEM = re.compile(
    r"\bBUG\b|WARNING:|Oops|general protection|Call Trace|"
    r"kernel BUG|RIP:|KASAN|UBSAN|kmemleak|soft lockup|hard LOCKUP|"
    r"hung_task|blocked for more than|rcu_sched detected stall|"
    r"rcu: INFO|Out of memory|oom-kill|page allocation failure|"
    r"list_add corruption|list_del corruption|refcount_t:|"
    r"sleeping function called from invalid context|"
    r"scheduling while atomic|lockdep|possible circular locking|"
    r"inconsistent lock state|DEBUG_LOCKS_WARN_ON|ODEBUG:|KFENCE|"
    r"lost this load's mark")

# Seconds a foreground load may run, from its module's arrival in the
# kernel, before insmod is killed; and the seconds the arrival may take
# (a KASAN guest takes longer than DEADLINE to load a module).
DEADLINE = 6.0
ARRIVAL_DEADLINE = 300.0

NUMBERS = ["0", "1", "2", "3", "7", "64", "100", "1000", "4096", "4097",
           "65536", "65537", "1048576", "1048577", "999999999",
           "1000000000000", "1000000000001", "4294967295", "4294967296",
           "18446744073709551615", "18446744073709551616", "-1", "-0",
           "0x10", "1e3", "", "x", "12abc", " 5", "5 ", "%s%n",
           "9" * 40]
CPULISTS = ["0", "1", "2", "3", "0-3", "1-3", "0,2", "3,1", "0-1,3",
            "0-3:2/4", "4", "64", "4095", "", ",", "1,,2", "1,", ",1",
            "1-", "-1", "3-1", "x", "0-x", "1 2", "0-999999", "a" * 300]
BOOLS = ["0", "1", "y", "n", "Y", "N", "true", "maybe", "", "2"]
# a small valid value that keeps a storm short, where its example does
# not give one: counts small, timeouts short
SHORT = {"count": "200", "secs": "2"}


def kind_of(prm: modparams.Param, entry: storms.Storm) -> str:
    """What values a parameter is fuzzed with, from what modinfo -p says
    of it: its type, its unit, and whether it is the storm's count."""
    if prm.type == "bool":
        return "bool"
    if prm.type == "charp":
        return "mode" if prm.choices else "cpus"
    if prm.name == "timeout":
        return "secs"
    if prm.name == entry.count_param or "0 = timed run" in prm.description:
        return "count"
    if prm.description.startswith("Microseconds"):
        return "us"
    if " in ns" in prm.description:
        return "ns"
    return "num"


def module_params(ko: str, storm: str) -> dict[str, tuple[str, str, list]]:
    """A storm's parameters as its module declares them (modinfo -p):
    name -> (kind, a valid value, the choices of a mode). The valid
    value is its example's (scripts/stormsuite/storms.py), else a short
    one of its kind, else its default where that is a number, else
    empty (the module's default)."""
    entry = storms.STORMS[storm]
    example = dict(p.split("=", 1) for p in entry.example.split())
    out = {}
    for prm in modparams.of_module(pathlib.Path(ko, f"{storm}.ko")):
        kind = kind_of(prm, entry)
        default = (prm.default or "").split(",")[0].split()
        number = default[0] if default and default[0].isdigit() else None
        valid = example.get(prm.name) or SHORT.get(kind) or (
            prm.choices[0] if prm.choices else number or "")
        if kind in ("bool", "num", "us", "ns") and not valid:
            valid = "0"
        out[prm.name] = (kind, valid, prm.choices)
    return out


def value(rng: random.Random, kind: str, valid: str,
          choices: list[str]) -> str:
    r = rng.random()
    if r < 0.35:
        return valid
    if kind == "bool":
        return rng.choice(BOOLS)
    if kind == "cpus":
        return rng.choice(CPULISTS)
    if kind == "mode":
        return rng.choice(choices + [c.capitalize() for c in choices[:1]]
                          + [choices[0] + "\n", "", "none", "x"])
    if kind in ("count", "secs", "us", "ns") and r < 0.7:
        small = {"count": 3000, "secs": 3, "us": 2000, "ns": 200000}[kind]
        return str(rng.randint(0, small))
    return rng.choice(NUMBERS)


def params_of(rng: random.Random,
              table: dict[str, tuple[str, str, list]]) -> list[str]:
    out = []
    for name, (kind, valid, choices) in table.items():
        if rng.random() < 0.45:
            out.append(f"{name}={value(rng, kind, valid, choices)}")
    rng.shuffle(out)
    return out


def dmesg_lines() -> list[str]:
    return subprocess.run(["dmesg"], capture_output=True, text=True,
                          errors="replace").stdout.splitlines()


def dmesg_mark(i: int) -> str:
    """A line of our own in the kernel log (a line count breaks once the
    log buffer wraps)."""
    mark = f"storm-fuzz-mark {os.getpid()}-{i}-{time.monotonic_ns()}"
    with open("/dev/kmsg", "w") as f:
        f.write(mark + "\n")
    return mark


def dmesg_since(mark: str) -> list[str]:
    lines = dmesg_lines()
    for n, line in enumerate(lines):
        if line.endswith(mark):
            return lines[n + 1:]
    return ["fuzz.py: the log lost this load's mark (buffer wrapped)"]


def loaded(storm: str) -> bool:
    with open("/proc/modules") as f:
        return any(line.split(" ", 1)[0] == storm for line in f)


def unload(storm: str) -> None:
    for _ in range(200):
        if not loaded(storm):
            return
        subprocess.run(["rmmod", storm], capture_output=True)
        time.sleep(0.05)


def arrived(proc: subprocess.Popen, storm: str) -> None:
    """Returns once insmod has ended or the storm's module is in the
    kernel (its /sys/module directory, made before its init runs);
    TimeoutExpired after ARRIVAL_DEADLINE."""
    end = time.monotonic() + ARRIVAL_DEADLINE
    while proc.poll() is None and not os.path.isdir(f"/sys/module/{storm}"):
        if time.monotonic() > end:
            raise subprocess.TimeoutExpired(proc.args, ARRIVAL_DEADLINE)
        time.sleep(0.05)


def one_load(ko: str, storm: str, params: list[str], ending: str,
             rng: random.Random, i: int) -> dict:
    """Load, end it as @ending says, unload; what happened."""
    mark = dmesg_mark(i)
    cmd = ["insmod", f"{ko}/{storm}.ko"] + params
    if ending == "background":
        cmd.append("background=1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            errors="replace")
    if ending == "signal":
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGKILL if rng.random() < 0.5
                         else signal.SIGTERM)
    elif ending == "rmmod-during":
        time.sleep(rng.uniform(0.0, 1.0))
        subprocess.run(["rmmod", storm], capture_output=True)
    try:
        arrived(proc, storm)
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        _, err = proc.communicate(timeout=60)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        return {"rc": None, "log": [], "err": "insmod did not return "
                "within 60 s of SIGKILL"}
    if ending == "background" and rc == 0:
        time.sleep(rng.choice([0.0, 0.0, rng.uniform(0.0, 2.0)]))
    unload(storm)
    return {"rc": rc, "err": err, "log": dmesg_since(mark),
            "still_loaded": loaded(storm)}


def judge(storm: str, ending: str, got: dict) -> tuple[str, list[str]]:
    """(outcome, problems) of one load."""
    problems = []
    log = got["log"]
    if got["rc"] is None:
        return "hung", [got["err"]]
    if got.get("still_loaded"):
        problems.append("module still loaded after rmmod")
    bad = [line for line in log if PROBLEM.search(line)]
    problems += [f"kernel log: {line}" for line in bad]
    ours = [line for line in log if f"{storm}: " in line
            and "taints kernel" not in line
            and "module verification failed" not in line]
    ended = [line for line in ours if "End of test" in line]
    early = [line for line in ours if "unloaded before the storm" in line]
    if got["rc"] == 0:
        if not ended and not early:
            problems.append("loaded, but no End of test")
        outcome = ("success" if any("SUCCESS" in e for e in ended)
                   else "ended" if ended else "unloaded-early")
    elif ended:
        # insmod got its signal during the storm: the storm still reports
        outcome = "signalled"
    elif got["rc"] < 0 and not ours:
        # the signal came before insmod reached the kernel
        outcome = "killed-before-load"
    else:
        outcome = "refused" if got["rc"] > 0 else "signalled-in-load"
        # a refusal after the parameters were checked follows the start
        if not [line for line in ours if "Start of test: " not in line]:
            problems.append(f"refused without a reason (insmod rc "
                            f"{got['rc']}: {got['err'].strip()}; log: "
                            f"{' | '.join(log[-3:])})")
    return outcome, problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ko", required=True, help="directory of the .ko files")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--loads", type=int, default=100)
    p.add_argument("--only", type=int, help="replay this one load")
    p.add_argument("--out", help="write the figures here (JSON)")
    args = p.parse_args()

    figures = {"seed": args.seed, "loads": 0, "outcomes": {},
               "splats": 0, "problems": []}
    names = sorted(storms.NAMES)
    tables = {n: module_params(args.ko, n) for n in names}
    indices = [args.only] if args.only is not None else range(args.loads)
    start = time.monotonic()
    for i in indices:
        # one generator per load: load I is the same with or without --only
        rng = random.Random(f"{args.seed}:{i}")
        storm = rng.choice(names)
        params = params_of(rng, tables[storm])
        ending = rng.choice(["wait", "wait", "signal", "background",
                             "rmmod-during"])
        got = one_load(args.ko, storm, params, ending, rng, i)
        outcome, problems = judge(storm, ending, got)
        figures["loads"] += 1
        figures["outcomes"][outcome] = figures["outcomes"].get(outcome,
                                                               0) + 1
        figures["splats"] += sum(p.startswith("kernel log:")
                                 for p in problems)
        for prob in problems:
            line = (f"load {i} (--seed {args.seed} --only {i}): {storm} "
                    f"{' '.join(params)} [{ending}]: {prob}")
            print(line, flush=True)
            figures["problems"].append(line)
        if (i + 1) % 25 == 0:
            print(f"fuzz: {i + 1} loads, "
                  f"{time.monotonic() - start:.0f} s", flush=True)
    figures["seconds"] = round(time.monotonic() - start, 1)
    summary = ", ".join(f"{k} {v}" for k, v in
                        sorted(figures["outcomes"].items()))
    print(f"fuzz: seed {args.seed}: {figures['loads']} loads ({summary}); "
          f"splats {figures['splats']}; problems "
          f"{len(figures['problems'])}; {figures['seconds']} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)
    return 1 if figures["problems"] else 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    sys.exit(main())
