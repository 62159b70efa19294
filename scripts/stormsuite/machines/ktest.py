"""ktest.pl, the kernel tree's engine for a test box, as storm box uses it.

ktest.pl (tools/testing/ktest/ in every kernel tree) builds a kernel,
installs it, reboots the box into it, watches its console for the login
prompt and for oopses, runs a test and bisects; storm box hands it all of
that. Each boot storm box makes is one ktest.pl run of a small config
written here: variables (the kernel to boot, STORM_KERNEL), then
`INCLUDE` of the user's box config (configs/box/box.conf is the
template), then one TEST_START section saying what to do (boot an
installed kernel and run storm's runs as ktest's TEST, or build and
install one).

This module also reads the few things storm itself needs from the box
config (how to ssh to the box) with ktest's own rules for `VAR := value`
variables and `OPTION = value` options: one reader, for the default
sections only; ktest.pl reads the rest.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import TextIO

# ktest.pl's own defaults for what storm reads (ktest.pl's %default)
SSH_EXEC_DEFAULT = "ssh $SSH_USER@$MACHINE $SSH_COMMAND"
SSH_USER_DEFAULT = "root"
# where storm's files live on the box, relative to the ssh user's home
# unless absolute (the variable STORM_BOX_DIR in the box config)
BOX_DIR_DEFAULT = "storm"
KTEST_REL = pathlib.Path("tools/testing/ktest/ktest.pl")
# ktest alone, from the linux-source tarball, when there is no tree
UNPACKED = pathlib.Path(__file__).resolve().parents[3] / "build" / "ktest"
# the suite's scripts (STORM_SCRIPTS: storm-ssh-console, for a box config)
SCRIPTS = pathlib.Path(__file__).resolve().parents[2]


class ConfigError(Exception):
    pass


@dataclasses.dataclass
class Config:
    """The default sections of a ktest config: variables and options."""
    path: pathlib.Path
    variables: dict[str, str]
    options: dict[str, str]

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.options.get(name, default)

    @property
    def ssh(self) -> list[str]:
        """The command that runs a command on the box, without the
        command: BOX_SSH if the config defines it, else ktest's SSH_EXEC
        with $SSH_USER and $MACHINE filled in and $SSH_COMMAND left off."""
        text = self.variables.get("BOX_SSH")
        if text is None:
            machine = self.options.get("MACHINE")
            if not machine:
                raise ConfigError(f"{self.path}: no MACHINE (the box's "
                                  "host name) and no BOX_SSH")
            text = self.options.get("SSH_EXEC", SSH_EXEC_DEFAULT)
            text = text.replace("$SSH_USER", self.options.get(
                "SSH_USER", SSH_USER_DEFAULT)).replace("$MACHINE", machine)
            if "$SSH_COMMAND" not in text:
                raise ConfigError(f"{self.path}: SSH_EXEC has no "
                                  "$SSH_COMMAND")
            text = text.split("$SSH_COMMAND")[0]
        if "${" in text:
            raise ConfigError(f"{self.path}: the ssh command {text!r} uses "
                              "an undefined variable")
        return shlex.split(text)

    @property
    def box_dir(self) -> str:
        return self.variables.get("STORM_BOX_DIR", BOX_DIR_DEFAULT)


def expand(value: str, variables: dict[str, str]) -> str:
    """${VAR} replaced where VAR is defined, left as it is otherwise (as
    ktest.pl's process_variables does: the shell may fill it in later)."""
    return re.sub(r"(?<!\\)\$\{(.*?)\}",
                  lambda m: variables.get(m.group(1), m.group(0)), value)


def read_config(path: pathlib.Path, variables: dict[str, str] | None = None
                ) -> Config:
    """The variables and default options of a ktest config and the files
    it INCLUDEs (relative to the including file's directory, then the
    working directory, as ktest.pl looks for them); reading stops at the
    first TEST_START. variables: defined before the file is read."""
    variables = dict(variables or {})
    options: dict[str, str] = {}
    _read(path.resolve(), variables, options, depth=0)
    return Config(path, variables, options)


def _read(path: pathlib.Path, variables: dict[str, str],
          options: dict[str, str], depth: int) -> bool:
    """False once a TEST_START section begins."""
    if depth > 10:
        raise ConfigError(f"{path}: INCLUDE nested too deep")
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from e
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if re.match(r"TEST_START\b", line):
            return False
        # a conditional section's options hold or not by ktest.pl's
        # expression rules: read as unconditional they would be wrong
        if re.match(r"(DEFAULTS\s+IF|ELSE)\b", line):
            raise ConfigError(
                f"{path}:{n}: '{line}': storm box does not evaluate "
                "ktest.pl's conditional sections (DEFAULTS IF, ELSE): give "
                "the box's options unconditionally")
        if re.match(r"DEFAULTS\b", line):
            continue
        m = re.match(r"INCLUDE\s+(\S+)", line)
        if m:
            name = expand(m.group(1), variables)
            inc = path.parent / name
            if not inc.is_file():
                inc = pathlib.Path(name)
            if not _read(inc.resolve(), variables, options, depth + 1):
                return False
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_\[\]]*)\s*:=\s*(.*)$", line)
        if m:
            variables[m.group(1)] = expand(m.group(2).strip(), variables)
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_\[\]]*)\s*=\s*(.*)$", line)
        if m:
            options[m.group(1)] = expand(m.group(2).strip(), variables)
    return True


def find_ktest(given: str | None = None) -> pathlib.Path:
    """ktest.pl: as given, $STORM_KTEST, or in the kernel source tree
    `storm kernel source` unpacks (build/linux-source-6.1)."""
    from ..kernel import linux_source
    for cand in (given, os.environ.get("STORM_KTEST")):
        if cand:
            p = pathlib.Path(cand)
            if p.is_dir():
                p = p / KTEST_REL
            if not p.is_file():
                raise ConfigError(f"{cand}: no ktest.pl there")
            return p.resolve()
    p = linux_source.TREE / KTEST_REL
    if p.is_file():
        return p
    return unpack_ktest(linux_source.tarball())


def unpack_ktest(tarball: pathlib.Path | None,
                 dest: pathlib.Path = UNPACKED) -> pathlib.Path:
    """tools/testing/ktest alone from Debian's linux-source tarball (the
    whole tree is not needed to drive a box)."""
    p = dest / KTEST_REL
    if p.is_file():
        return p
    if tarball is None:
        raise ConfigError("no ktest.pl: install linux-source-6.1 "
                          "(scripts/setup), or give --ktest TREE")
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    top = tarball.name.split(".tar")[0]
    res = subprocess.run(["tar", "-xf", str(tarball), "-C", str(tmp),
                          "--strip-components=1", f"{top}/{KTEST_REL.parent}"],
                         capture_output=True, text=True)
    if res.returncode != 0 or not (tmp / KTEST_REL).is_file():
        raise ConfigError(f"no {KTEST_REL} in {tarball}: "
                          f"{res.stderr.strip()}")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return p


@dataclasses.dataclass(frozen=True)
class Run:
    """One ktest.pl run: the variables storm defines before the box
    config (configs/box/box.conf uses them; STORM_SCRIPTS is the suite's
    scripts/, for `CONSOLE = ${STORM_SCRIPTS}/storm-ssh-console ...`),
    and its TEST_START section."""
    kernel: str             # STORM_KERNEL: the release to boot
    build_dir: pathlib.Path     # STORM_BUILD_DIR, for BUILD_DIR
    output_dir: pathlib.Path    # STORM_OUTPUT_DIR, for OUTPUT_DIR
    localversion: str           # STORM_LOCALVERSION, for LOCALVERSION
    options: tuple[tuple[str, str], ...]  # TEST_TYPE, BUILD_TYPE, ...

    @property
    def variables(self) -> dict[str, str]:
        return {"STORM_KERNEL": self.kernel,
                "STORM_BUILD_DIR": str(self.build_dir),
                "STORM_OUTPUT_DIR": str(self.output_dir),
                "STORM_LOCALVERSION": self.localversion,
                "STORM_SCRIPTS": str(SCRIPTS)}


def config_text(box_config: pathlib.Path, run: Run, why: str) -> str:
    """The config storm hands ktest.pl for one run."""
    lines = [f"# written by storm box: {why}",
             "# (ktest.pl's format: variables, the box config, one test)"]
    lines += [f"{k} := {v}" for k, v in run.variables.items()]
    lines += [f"INCLUDE {box_config.resolve()}", "", "TEST_START"]
    lines += [f"{k} = {v}" for k, v in run.options]
    return "\n".join(lines) + "\n"


def nobuild_dir(release: str, base: pathlib.Path) -> pathlib.Path:
    """For a kernel ktest does not build: a directory whose Makefile
    answers ktest's `make kernelrelease` (all it asks of BUILD_DIR and
    OUTPUT_DIR then) with the kernel's release."""
    d = base / "nobuild" / re.sub(r"[^A-Za-z0-9._+-]", "_", release)
    d.mkdir(parents=True, exist_ok=True)
    mk = d / "Makefile"
    text = ("# ktest.pl asks the release of the kernel it boots here "
            "(BUILD_TYPE = nobuild)\n"
            f"kernelrelease:\n\t@echo {release}\n")
    if not mk.is_file() or mk.read_text() != text:
        mk.write_text(text)
    return d


# What ktest.pl asks on its terminal when the config lacks it: storm
# checks first (missing_options), and a prompt that still comes (an
# unused option's "continue?") stops the run rather than hanging it.
MANDATORY = ("MACHINE", "BUILD_DIR", "OUTPUT_DIR", "POWER_CYCLE", "CONSOLE",
             "SSH_USER", "BUILD_TARGET", "TARGET_IMAGE", "LOCALVERSION")
DEFAULTED = {"SSH_USER", "BUILD_TARGET", "TARGET_IMAGE", "LOCALVERSION"}
PROMPT = re.compile(r"(^[A-Z_]+ = (\[.*\] )?|\[[yYnN]/[yYnN]\] ?|"
                    r"\(yes, no, or cancel\) ?)$")
PROMPT_SECONDS = 5


def missing_options(cfg: Config) -> list[str]:
    """The options ktest.pl would ask for (storm box boots: not only a
    build), given the variables storm defines."""
    return [o for o in MANDATORY if o not in cfg.options]


def run(ktest: pathlib.Path, config: pathlib.Path, log: pathlib.Path,
        echo: TextIO | None = None, timeout: float | None = None) -> int:
    """ktest.pl on config, in config's directory, its output into log
    (and the lines that say its steps to echo); its exit status, or 124
    on the timeout and 125 on a question to its terminal. stdin is a pipe
    nobody writes: ktest.pl copies its stdin to the console and would
    spin on one at end of file."""
    cmd = ["perl", str(ktest), str(config)]
    t0 = time.monotonic()
    with open(log, "ab") as out:
        # its own process group, so that what ktest.pl leaves behind
        # when it is stopped (its CONSOLE command, a TEST) goes with it;
        # not a session of its own: as a session leader it would take the
        # console's pty as its terminal, and die of the hangup when it
        # closes the console
        proc = subprocess.Popen(cmd, cwd=config.parent, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, process_group=0)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        partial = b""
        quiet_since = time.monotonic()
        status = None
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], 1.0)
                now = time.monotonic()
                if ready:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    out.write(chunk)
                    out.flush()
                    quiet_since = now
                    *lines, partial = (partial + chunk).split(b"\n")
                    for raw in lines:
                        line = raw.decode(errors="replace")
                        if echo is not None and is_step_line(line):
                            echo.write(f"ktest: {line.strip()}\n")
                            echo.flush()
                elif now - quiet_since > PROMPT_SECONDS and PROMPT.search(
                        partial.decode(errors="replace")):
                    msg = (f"\nstorm box: ktest.pl asks "
                           f"{partial.decode(errors='replace')!r}; stopped "
                           f"(set it in the box config)\n")
                    out.write(msg.encode())
                    if echo is not None:
                        echo.write(msg.lstrip())
                    status = 125
                    break
                if timeout is not None and now - t0 > timeout:
                    out.write(f"\nstorm box: stopped ktest.pl after "
                              f"{timeout:.0f} s\n".encode())
                    status = 124
                    break
        finally:
            if proc.poll() is None:
                # INT: what ktest.pl's own handler stops on
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rc = proc.wait()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if proc.stdin:
                proc.stdin.close()
    return rc if status is None else status



STEP = re.compile(r"^(RUNNING TEST|KTEST RESULT|CRITICAL FAILURE|"
                  r"run test |Successful boot found|.*\bFAILED!|"
                  r"Build time:|Install time:|Reboot time:|Test time:)")


def is_step_line(line: str) -> bool:
    return bool(STEP.match(line.strip()))


def failure(log: pathlib.Path) -> str:
    """ktest.pl's own words on why a run failed (its last CRITICAL
    FAILURE line: no login prompt, a bug on the console, ...), if any."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines()
             if "CRITICAL FAILURE" in ln]
    return f"ktest.pl: {lines[-1]}" if lines else ""
