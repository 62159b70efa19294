"""scripts/storm-ssh-console, ktest.pl's console for a box reached over
ssh alone, against a stand-in ssh: a script that runs the remote side
with this host's sh, a kernel log, new kernel messages and an uptime
from files, and "reboots" (drops the connection, refuses the next ones)
when told to. Checks what ktest.pl reads: the boot that was up when the
console started gives no banner and no login line; a boot after it gives
its log from the "Linux version" banner, then the login line, then new
messages; and INT ends the console and everything it started."""

from __future__ import annotations

import os
import pathlib
import select
import shutil
import signal
import subprocess
import time

import pytest

from conftest import REPO

CONSOLE = REPO / "scripts" / "storm-ssh-console"

FAKE_SSH = r"""#!/bin/sh
# stand-in ssh: the last argument is the remote command
for last; do :; done
s=$FAKE_STATE
echo "$*" >>"$s/attempts"
if [ -e "$s/down" ]; then
    echo "ssh: connect to host box port 22: Connection refused" >&2
    exit 255
fi
script=$(printf '%s\n' "$last" | sed "s|/proc/uptime|$s/uptime|")
# sshd makes the command a session leader
PATH=$s/bin:$PATH setsid sh -c "$script" &
r=$!
# killed: the connection is gone, the remote side stays (as sshd leaves it)
trap 'exit 255' TERM
while [ ! -e "$s/down" ]; do sleep 0.2; done
# the box goes down: everything of the session with it
kill -- "-$r"
echo "Connection to box closed by remote host." >&2
exit 255
"""

FAKE_DMESG = r"""#!/bin/sh
case ${1-} in
--help)
    echo " -w, --follow                wait for new messages"
    if [ -e "$FAKE_STATE/follow-new" ]; then
        echo " -W, --follow-new            wait and print only new messages"
    fi ;;
-w) cat "$FAKE_STATE/dmesg"; exec tail -n +1 -f "$FAKE_STATE/new" ;;
-W) exec tail -n 0 -f "$FAKE_STATE/new" ;;
*) cat "$FAKE_STATE/dmesg" ;;
esac
"""


class Box:
    """The stand-in box's files, and the console running against it."""

    def __init__(self, tmp: pathlib.Path, follow_new: bool = False):
        self.state = tmp / "box"
        (self.state / "bin").mkdir(parents=True)
        if follow_new:
            (self.state / "follow-new").touch()
        for name, text in (("ssh", FAKE_SSH), ("bin/dmesg", FAKE_DMESG)):
            p = self.state / name
            p.write_text(text)
            p.chmod(0o755)
        self.boot("6.1.0-old", 1000)
        env = dict(os.environ, FAKE_STATE=str(self.state),
                   TMPDIR=str(tmp))
        self.proc = subprocess.Popen(
            [str(CONSOLE), str(self.state / "ssh"), "-p", "22", "root@box"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env)
        self.started = time.monotonic()
        self.buf = b""

    def boot(self, release: str, uptime: int) -> None:
        (self.state / "dmesg").write_text(
            f"[    0.000000] Linux version {release} (gcc) #1 SMP\n"
            "[    0.100000] Command line: root=/dev/vda\n")
        (self.state / "new").write_text("")
        (self.state / "uptime").write_text(f"{uptime}.25 3.50\n")

    def lines_until(self, pattern: str, timeout: float = 30) -> list[str]:
        """The console's lines up to the first that has pattern."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        t0 = time.monotonic()
        while pattern.encode() not in self.buf:
            left = timeout - (time.monotonic() - t0)
            assert left > 0, f"no {pattern!r} in {self.buf.decode()!r}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                assert chunk, f"console ended: {self.buf.decode()!r}"
                self.buf += chunk
        cut = self.buf.index(pattern.encode())
        end = self.buf.index(b"\n", cut) + 1
        out, self.buf = self.buf[:end], self.buf[end:]
        return out.decode().splitlines()

    def wait_follower(self) -> None:
        """Until the remote side follows the kernel log (dmesg -W shows
        only what comes after it started)."""
        t0 = time.monotonic()
        while not subprocess.run(["pgrep", "-f", f"{self.state}/new$"],
                                 capture_output=True).stdout:
            assert time.monotonic() - t0 < 20, "no follower"
            time.sleep(0.1)

    def attempts(self) -> int:
        try:
            return len((self.state / "attempts").read_text().splitlines())
        except FileNotFoundError:
            return 0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        (self.state / "down").touch()
        time.sleep(3)
        for pid in left_behind(self.state):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(params=["dmesg -w", "dmesg -W"])
def box(tmp_path, request):
    if not shutil.which("setsid"):
        pytest.skip("no setsid")
    b = Box(tmp_path, follow_new=request.param == "dmesg -W")
    yield b
    b.close()


def left_behind(state: pathlib.Path) -> list[str]:
    out = subprocess.run(["pgrep", "-f", str(state)], capture_output=True,
                         text=True).stdout.split()
    return [p for p in out if int(p) != os.getpid()]


def test_help():
    res = subprocess.run([str(CONSOLE), "--help"], capture_output=True,
                         text=True)
    assert res.returncode == 0
    assert res.stdout.startswith("usage: storm-ssh-console SSH_COMMAND...")
    assert "CLOSE_CONSOLE_SIGNAL" in res.stdout
    res = subprocess.run([str(CONSOLE)], capture_output=True, text=True)
    assert res.returncode == 2 and "usage:" in res.stderr


def test_a_boot_then_the_next(box):
    # the boot that was up: one line, no banner, no login, then what the
    # kernel logs from then on (a serial console opened now would show)
    first = box.lines_until("new kernel messages follow")
    assert not any("Linux version" in ln or "login:" in ln for ln in first)
    assert "up 1000 s, since before this console started" in first[-1]
    box.wait_follower()
    with open(box.state / "new", "a") as f:
        f.write("[ 1000.5] storm: a message after the console started\n")
    assert box.lines_until("a message after")[-1].endswith(
        "a message after the console started")
    # the box reboots: the connection drops, the next tries are refused;
    # ssh's words once each, and tries every second
    (box.state / "down").touch()
    gone = box.lines_until("Connection refused")
    assert any("closed by remote host" in ln for ln in gone)
    n = box.attempts()
    time.sleep(3)
    assert box.attempts() >= n + 2
    # the new boot (up 1 s, begun after the console started): its log
    # from the banner, then the login line, then new messages
    while time.monotonic() - box.started < 3:
        time.sleep(0.2)
    box.boot("6.12.0-new", 1)
    (box.state / "down").unlink()
    boot = box.lines_until("login:")
    box.wait_follower()
    assert not any("Connection refused" in ln for ln in boot[1:])
    banner = [i for i, ln in enumerate(boot) if "Linux version" in ln]
    assert len(banner) == 1
    assert "Linux version 6.12.0-new " in boot[banner[0]]
    assert "Command line" in boot[banner[0] + 1]
    assert boot[-1] == ("storm-ssh-console: login: "
                        f"{os.uname().nodename} answers ssh (up 1 s, "
                        f"{os.uname().release})")
    with open(box.state / "new", "a") as f:
        f.write("[    9.0] WARNING: CPU: 1 PID: 7 at kernel/smp.c\n")
    assert "WARNING: CPU: 1" in box.lines_until("WARNING")[-1]


def test_int_ends_it_and_its_ssh(box):
    """ktest.pl closes its console with INT (CLOSE_CONSOLE_SIGNAL): the
    console, its ssh and the remote side's follower all end."""
    box.lines_until("new kernel messages follow")
    assert left_behind(box.state)
    t0 = time.monotonic()
    box.proc.send_signal(signal.SIGINT)
    assert box.proc.wait(timeout=10) == 130
    assert time.monotonic() - t0 < 5
    deadline = time.monotonic() + 10
    while left_behind(box.state) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left_behind(box.state) == []
    # and its scratch file is gone
    assert not list(box.state.parent.glob("storm-ssh-console.*"))


def test_term_while_the_box_is_down(box):
    (box.state / "down").touch()
    box.lines_until("Connection refused")
    box.proc.send_signal(signal.SIGTERM)
    assert box.proc.wait(timeout=10) == 143
