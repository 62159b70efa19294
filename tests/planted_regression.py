"""The regression the box e2e runs plant in Debian's linux-source-6.1
(storm kernel source; tag storm-linux-source): a loop of plain
instructions on the sender before every call smp_call_function_single()
and its kin queue, some 20 us on a call of 4 to 6 us under TCG here.
Not ndelay(): under single-threaded TCG its PAUSE hands the host thread to
the next vCPU (tests/e2e/bisect-linux plants a tenth of it, for a
bisect in guests of many boots a commit). tests/e2e/box-ab patches it in;
tests/e2e/box-bisect commits it among harmless commits."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

QUEUE = ("\tif (llist_add(node, &per_cpu(call_single_queue, cpu)))\n"
         "\t\tsend_call_function_single_ipi(cpu);\n}\n")
PLANTED = ("\tfor (int storm_i = 0; storm_i < 6000; storm_i++)\n"
           "\t\tbarrier();\n" + QUEUE)
SUBJECT = "smp: spin a little before queueing a single call"


def git(tree: pathlib.Path, *args: str, env: dict[str, str] | None = None,
        stdin: str | None = None) -> str:
    res = subprocess.run(["git", "-C", str(tree), *args], text=True,
                         input=stdin, capture_output=True, check=False,
                         env={**os.environ, **(env or {})})
    if res.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout.strip()


def plant(smp_c: str) -> str:
    """kernel/smp.c with the loop before its one queueing site."""
    if smp_c.count(QUEUE) != 1:
        raise SystemExit("kernel/smp.c has no single queueing site to "
                         "plant the regression in")
    return smp_c.replace(QUEUE, PLANTED)


def append(text: str, line: str) -> str:
    return text + line + "\n"


# The commits of the box bisect, on the tag: harmless, harmless, the
# regression, harmless, harmless (the shape of bisect-linux's)
CHAIN = (
    ("Documentation/core-api/index.rst",
     lambda t: append(t, "\nIPI costs are measured with the storm suite."),
     "Documentation: mention IPI benchmarks"),
    ("kernel/smp.c",
     lambda t: t.replace("static int generic_exec_single(",
                         "/* Run csd on cpu: at once when it is this CPU, "
                         "else queue it there. */\nstatic int "
                         "generic_exec_single(", 1),
     "smp: comment generic_exec_single()"),
    ("kernel/smp.c", plant, SUBJECT),
    ("mm/slub.c",
     lambda t: append(t, "/* see also: slabstorm, for the IPIs cache "
                      "creation costs */"),
     "mm/slub: point at slabstorm"),
    ("README", lambda t: append(t, ""), "README: trailing newline"),
)


def commit_chain(tree: pathlib.Path, base: str, branch: str
                 ) -> list[str]:
    """CHAIN's commits on base as branch (made again each time, with a
    fixed date: the same commits every time), without a checkout: their
    shas, the regression the third."""
    date = {"GIT_AUTHOR_NAME": "storm", "GIT_AUTHOR_EMAIL": "storm@localhost",
            "GIT_COMMITTER_NAME": "storm",
            "GIT_COMMITTER_EMAIL": "storm@localhost",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    parent = git(tree, "rev-parse", "--verify", f"{base}^{{commit}}")
    shas = []
    with tempfile.TemporaryDirectory() as tmp:
        index = {"GIT_INDEX_FILE": str(pathlib.Path(tmp) / "index")}
        git(tree, "read-tree", parent, env=index)
        for path, change, subject in CHAIN:
            old = git(tree, "show", f"{parent}:{path}") + "\n"
            new = change(old)
            if new == old:
                raise SystemExit(f"{subject}: changes nothing in {path}")
            blob = git(tree, "hash-object", "-w", "--stdin", stdin=new)
            git(tree, "update-index", "--cacheinfo", f"100644,{blob},{path}",
                env=index)
            tree_sha = git(tree, "write-tree", env=index)
            parent = git(tree, "commit-tree", tree_sha, "-p", parent, "-m",
                         subject, env=date)
            shas.append(parent)
    git(tree, "branch", "-f", branch, parent)
    return shas
