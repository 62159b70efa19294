"""storm kernel build and storm ab, without building a kernel: the
configuration checks, the refusals, and what a half-built directory is."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from stormsuite.designs import ab
from stormsuite.kernel import kbuild, kernels, source

STORM = str(kbuild.REPO / "scripts" / "storm")


def test_parse_config_reads_set_and_unset_options():
    cfg = kbuild.parse_config(
        "CONFIG_SMP=y\n# CONFIG_USB is not set\nCONFIG_NR_CPUS=64\n"
        'CONFIG_LOCALVERSION="-storm"\n# a comment\nCONFIG_SMP=n\n')
    assert cfg == {"CONFIG_SMP": "n", "CONFIG_USB": "n",
                   "CONFIG_NR_CPUS": "64", "CONFIG_LOCALVERSION": '"-storm"'}


def test_unmet_lists_what_the_tree_did_not_take():
    wanted = {"CONFIG_SMP": "y", "CONFIG_FOO": "y", "CONFIG_USB": "n",
              "CONFIG_LOCALVERSION": '"-x"'}
    got = {"CONFIG_SMP": "y", "CONFIG_LOCALVERSION": '"-x"'}
    assert kbuild.unmet(wanted, got) == [
        "CONFIG_FOO=y (got n): refused, by its dependencies or a choice"]


def test_an_option_the_kernel_no_longer_has_is_told_from_a_refused_one(
        tmp_path):
    """7.3 has no PROC_SYSCTL option any more, and offers no
    PREEMPT_VOLUNTARY on x86 (it depends on !ARCH_HAS_PREEMPT_LAZY): the
    notes say which is which, from the tree's own Kconfig files."""
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "Kconfig.preempt").write_text(
        "choice\n\tprompt \"Preemption Model\"\n"
        "config PREEMPT_VOLUNTARY\n\tdepends on !ARCH_HAS_PREEMPT_LAZY\n"
        "config PREEMPT_LAZY\n\tbool\nendchoice\n"
        "menuconfig SMP\n\tbool\n")
    known = kbuild.kconfig_symbols(tmp_path)
    assert {"CONFIG_PREEMPT_VOLUNTARY", "CONFIG_PREEMPT_LAZY",
            "CONFIG_SMP"} <= known
    wanted = {"CONFIG_PREEMPT_VOLUNTARY": "y", "CONFIG_PROC_SYSCTL": "y",
              "CONFIG_GONE_AND_OFF": "n", "CONFIG_SMP": "y"}
    got = {"CONFIG_PREEMPT_LAZY": "y", "CONFIG_SMP": "y"}
    assert kbuild.unmet(wanted, got, known) == [
        "CONFIG_PREEMPT_VOLUNTARY=y (got n): refused, by its dependencies "
        "or a choice",
        "CONFIG_PROC_SYSCTL=y: this kernel has no such option"]
    assert kbuild.preempt_model(got) == "PREEMPT_LAZY"
    assert kbuild.preempt_model({"CONFIG_PREEMPT_VOLUNTARY": "y",
                                 "CONFIG_PREEMPT_DYNAMIC": "y"}) \
        == "PREEMPT_VOLUNTARY (PREEMPT_DYNAMIC)"


def test_user_fragments_come_after_the_guest_config(tmp_path):
    frag = tmp_path / "mine.config"
    frag.write_text("CONFIG_PREEMPT_VOLUNTARY=n\nCONFIG_PREEMPT=y\n")
    merged = kbuild.merged_fragment([frag])
    cfg = kbuild.parse_config(merged)
    assert cfg["CONFIG_PREEMPT_VOLUNTARY"] == "n"
    assert cfg["CONFIG_PREEMPT"] == "y"
    assert cfg["CONFIG_SMP"] == "y"
    # the release name stays out of autoconf.h, so builds share ccache
    assert cfg["CONFIG_LOCALVERSION"] == '""'


def test_the_release_name_goes_to_make_not_to_the_config():
    assert kbuild.make_env("-storm-abc")["LOCALVERSION"] == "-storm-abc"
    assert kbuild.make_env()["LOCALVERSION"] == ""


def test_guest_config_has_every_essential_option():
    cfg = kbuild.parse_config(kbuild.GUEST_CONFIG.read_text())
    for sym in kbuild.ESSENTIAL + ("CONFIG_DEBUG_INFO_BTF", "CONFIG_KPROBES",
                                   "CONFIG_BPF_SYSCALL", "CONFIG_FTRACE"):
        assert cfg.get(sym) == "y", sym


def test_refuses_what_is_not_a_kernel_tree(tmp_path):
    with pytest.raises(kbuild.BuildError, match="not a kernel source tree"):
        kbuild.build(tmp_path, tmp_path / "out")


def test_refuses_a_tree_with_an_in_tree_config(tmp_path):
    for name in ("Makefile", "Kconfig", ".config"):
        (tmp_path / name).write_text("")
    with pytest.raises(kbuild.BuildError, match="mrproper"):
        kbuild.build(tmp_path, tmp_path / "out")


def test_a_build_failure_shows_the_compiler_error(tmp_path):
    log = tmp_path / "build.log"
    script = "echo 'kernel/smp.c:12:1: error: expected ; before }'; exit 2"
    with pytest.raises(kbuild.BuildError) as e:
        kbuild.run_make(["sh", "-c", script], log, "kernel x", False)
    assert "kernel/smp.c:12:1: error: expected" in str(e.value)
    assert "exit 2" in str(e.value)


def fake_built_tree(d: pathlib.Path, finished: bool) -> None:
    (d / "arch" / "x86" / "boot").mkdir(parents=True)
    (d / "arch" / "x86" / "boot" / "bzImage").write_text("")
    (d / "include" / "generated").mkdir(parents=True)
    (d / "include" / "generated" / "utsrelease.h").write_text(
        '#define UTS_RELEASE "6.1.192-storm"\n')
    (d / kbuild.FRAGMENT_COPY).write_text("")
    if finished:
        (d / kbuild.STAMP).write_text("{}\n")


def test_a_finished_build_directory_boots(tmp_path):
    fake_built_tree(tmp_path, finished=True)
    k = kernels.resolve(str(tmp_path))
    assert k.release == "6.1.192-storm" and k.kdir == tmp_path


def test_a_half_built_directory_is_refused(tmp_path):
    fake_built_tree(tmp_path, finished=False)
    with pytest.raises(kernels.KernelNotFound, match="did not finish"):
        kernels.resolve(str(tmp_path))


@pytest.mark.parametrize("name,want", [
    ("0001-smp-let-the-target-settle.patch", "smp-let-the-target-s"),
    ("fix.patch", "fix"),
    ("my fix+v2.diff", "my-fix-v2"),
])
def test_patch_names_make_legal_releases(name, want):
    assert ab.patch_name(pathlib.Path(name)) == want


@pytest.mark.parametrize("argv,message", [
    (["kernel"], "usage: storm kernel build"),
    (["kernel", "build", "/nonexistent", "--localversion", "a b"],
     "letters, digits"),
    (["kernel", "build"], "give a TREE or --series, one of them"),
    (["kernel", "build", "/tmp", "--series", "7.3"],
     "give a TREE or --series, one of them"),
    (["kernel", "build", "--series", "5.15"], "invalid choice"),
    (["ab", "--tree", "/tmp", "--base", "HEAD", "--patch", "/nonexistent",
      "ipistorm"], "no such patch file"),
    (["bisect", "--tree", "/tmp", "--good", "a", "--bad", "b", "--boots",
      "1", "ipistorm"], "can never show a change"),
    (["matrix", "--boots", "0", "ipistorm"], "--boots and --jobs"),
    (["matrix", "--boots", "1", "--no-insn", "ipistorm"],
     "can never show a change"),
    (["bisect", "--tree", "/tmp", "--good", "a", "--bad", "b",
      "--confidence", "1.5", "ipistorm"], "between 0 and 1"),
    (["bisect", "--tree", "/tmp", "--good", "a", "--bad", "b",
      "--confidence", "0", "ipistorm"], "between 0 and 1"),
])
def test_bad_arguments_are_refused(argv, message):
    res = subprocess.run([STORM, *argv], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2
    assert message in res.stderr


@pytest.mark.parametrize("sub", [["kernel", "build"], ["ab"], ["bisect"],
                                 ["bisect-step"]])
def test_help(sub):
    res = subprocess.run([STORM, *sub, "--help"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL)
    assert res.returncode == 0 and "usage" in res.stdout + res.stderr


def test_two_trees_of_one_name_get_two_build_directories(tmp_path):
    a, b = tmp_path / "a" / "linux", tmp_path / "b" / "linux"
    assert kbuild.default_out(a) != kbuild.default_out(b)
    assert kbuild.default_out(a).name.startswith("linux-")
    assert kbuild.default_out(a, "bisect").name.endswith("-bisect")


def test_a_build_directory_of_another_tree_is_refused(tmp_path):
    for tree in ("a", "b"):
        (tmp_path / tree).mkdir()
        for name in ("Makefile", "Kconfig"):
            (tmp_path / tree / name).write_text("")
    out = tmp_path / "out"
    out.mkdir()
    (out / "source").symlink_to(tmp_path / "a")
    with pytest.raises(kbuild.BuildError, match="must not mix"):
        kbuild.build(tmp_path / "b", out)


def test_a_fragment_that_drops_what_the_guest_needs_is_refused(tmp_path,
                                                               monkeypatch):
    """A user fragment may turn off 9p; the build must stop there, not
    produce a kernel the guest runner cannot boot."""
    def fake_make(args, log, what, progress):
        # what allnoconfig makes of guest.config + "# CONFIG_9P_FS is not set"
        (tmp_path / ".config").write_text(
            "CONFIG_SMP=y\nCONFIG_MODULES=y\n# CONFIG_9P_FS is not set\n")
    monkeypatch.setattr(kbuild, "run_make", fake_make)
    fragment = "CONFIG_SMP=y\nCONFIG_MODULES=y\nCONFIG_9P_FS=y\n"
    with pytest.raises(kbuild.BuildError, match="CONFIG_9P_FS"):
        kbuild.configure(tmp_path, tmp_path, fragment, 1, False)
    # and nothing marks the refused configuration as done
    assert not (tmp_path / kbuild.FRAGMENT_COPY).exists()


def test_ab_refuses_a_patch_that_does_not_apply(tmp_path):
    """The patch is checked against the base before anything is built."""
    tree = tmp_path / "linux"
    tree.mkdir()
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c",
           "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    (tree / "smp.c").write_text("int a;\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    patch = tmp_path / "0001-fix.patch"
    patch.write_text("--- a/smp.c\n+++ b/smp.c\n@@ -1 +1 @@\n"
                     "-int b;\n+int c;\n")
    before = sorted(source.BUILD_ROOT.glob("*")) \
        if source.BUILD_ROOT.exists() else []
    res = subprocess.run([STORM, "ab", "--tree", str(tree), "--base",
                          "HEAD", "--patch", str(patch), "ipistorm"],
                         capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2
    assert "does not apply" in res.stderr
    assert "building" not in res.stderr
    # checked in a scratch index: no source directory, no build directory
    after = sorted(source.BUILD_ROOT.glob("*")) \
        if source.BUILD_ROOT.exists() else []
    assert after == before


def fake_headers(d: pathlib.Path, release: str, cc: str = "") -> pathlib.Path:
    """A kernel's headers as make reads them: its release, and the
    compiler it was built with."""
    (d / "include" / "generated").mkdir(parents=True)
    (d / "include" / "generated" / "utsrelease.h").write_text(
        f'#define UTS_RELEASE "{release}"\n')
    if cc:
        (d / "include" / "config").mkdir(parents=True)
        (d / "include" / "config" / "auto.conf").write_text(
            f'CONFIG_CC_VERSION_TEXT="{cc} (Debian 14.2.0-19) 14.2.0"\n')
    return d


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "--no-print-directory", "-C",
                           str(kbuild.REPO), *args], capture_output=True, text=True)


def test_a_kernel_below_the_floor_is_refused_in_one_line(tmp_path):
    """make KDIR= a 5.15 kernel: one line naming it, the floor and why,
    before any compiler runs."""
    kdir = fake_headers(tmp_path / "5.15", "5.15.0-1-amd64")
    for target in ("modules", "check"):
        res = make(f"KDIR={kdir}", target)
        assert res.returncode != 0
        errors = [ln for ln in res.stderr.splitlines()
                  if ln.startswith("error:")]
        assert errors == ["error: 5.15.0-1-amd64 is below the floor, 6.1: "
                          "the oldest kernel the storms are built and "
                          "tested on"]
    assert not (kbuild.REPO / "build" / "5.15.0-1-amd64").exists()


def test_headers_whose_compiler_is_missing_are_refused(tmp_path):
    """Debian's 7.3 headers on a Debian 12 host ask for gcc-14: make
    KDIR= them names the compiler instead of failing in kbuild."""
    kdir = fake_headers(tmp_path / "7.3", "7.3.4+deb13-amd64",
                        cc="x86_64-linux-gnu-gcc-no-such")
    res = make(f"KDIR={kdir}", "modules")
    assert res.returncode != 0
    assert "error: 7.3.4+deb13-amd64 was built with " \
        "x86_64-linux-gnu-gcc-no-such, which is not installed" in res.stderr


def test_check_skips_installed_kernels_it_cannot_build_and_says_why(tmp_path):
    """make check over every installed kernel: one it cannot build for is
    skipped with its reason and the loop goes on, instead of a stop before
    the others (and the tests) run."""
    fake_headers(tmp_path / "5.15.0-1-amd64" / "build", "5.15.0-1-amd64")
    fake_headers(tmp_path / "7.3.4+deb13-amd64" / "build",
                 "7.3.4+deb13-amd64", cc="x86_64-linux-gnu-gcc-no-such")
    for target in ("check", "all-kernels"):
        res = make(f"MODULES_DIR={tmp_path}", target)
        assert res.returncode == 0, res.stderr
        skipped = [ln for ln in res.stdout.splitlines() if "skipped:" in ln]
        assert len(skipped) == 2
        assert "below the floor, 6.1" in skipped[0]
        assert "x86_64-linux-gnu-gcc-no-such, which is not installed" \
            in skipped[1]


def test_a_whole_config_is_the_base_under_the_guest_config(tmp_path,
                                                           monkeypatch):
    """--config takes a bot's whole .config (make's header says what it
    is): it goes first, so guest.config's essentials win over its
    '# CONFIG_9P_FS is not set', and user fragments after; its own
    symbols are not reported one by one when the tree lacks them."""
    bot = tmp_path / "config-bot"
    bot.write_text(f"#\n{kbuild.WHOLE_CONFIG}\n# Linux/x86 7.9.0 Kernel "
                   "Configuration\n#\n# CONFIG_9P_FS is not set\n"
                   "CONFIG_KVM=m\nCONFIG_GONE_IN_THIS_TREE=y\n")
    frag = tmp_path / "mine.config"
    frag.write_text("CONFIG_KVM=y\n")
    assert kbuild.is_whole_config(bot) and not kbuild.is_whole_config(frag)
    merged = kbuild.merged_fragment([frag, bot])
    assert merged.index("config-bot") < merged.index("guest.config") \
        < merged.index("mine.config")
    cfg = kbuild.parse_config(merged)
    assert cfg["CONFIG_9P_FS"] == "y" and cfg["CONFIG_KVM"] == "y"

    def fake_make(args, log, what, progress):
        # the tree takes what it has: everything asked but the gone one
        (tmp_path / ".config").write_text("".join(
            f"{k}={v}\n" for k, v in cfg.items()
            if k != "CONFIG_GONE_IN_THIS_TREE"))
    monkeypatch.setattr(kbuild, "run_make", fake_make)
    monkeypatch.setattr(kbuild, "kconfig_symbols", lambda tree: set())
    notes = []
    monkeypatch.setattr(kbuild.sys, "stderr",
                        type("E", (), {"write": notes.append,
                                       "flush": lambda self: None})())
    kbuild.configure(tmp_path, tmp_path, merged, 1, False)
    assert not any("GONE_IN_THIS_TREE" in n for n in notes), notes


def test_an_arm64_build_is_named_apart():
    """Its release differs from the same tree's x86 build, whose storms
    and modules live in build/<release> too."""
    assert kbuild.arch_named("-storm", "x86_64") == "-storm"
    assert kbuild.arch_named("-storm", "arm64") == "-storm-arm64"


def test_a_tree_with_other_kconfig_files_is_configured_again(tmp_path,
                                                             monkeypatch):
    """The same fragment skips allnoconfig only while the tree's Kconfig
    files are those that made .config: a build directory that moves to
    another revision is configured afresh, not synced by make, which
    would give the options new in the tree their defaults."""
    tree, out = tmp_path / "linux", tmp_path / "out"
    (tree / "arch").mkdir(parents=True)
    out.mkdir()
    (tree / "Kconfig").write_text("source \"arch/Kconfig\"\n")
    (tree / "arch" / "Kconfig").write_text("config SMP\n\tbool\n")
    runs = []

    def fake_make(args, log, what, progress):
        runs.append(what)
        (out / ".config").write_text("CONFIG_SMP=y\n")
    monkeypatch.setattr(kbuild, "run_make", fake_make)
    monkeypatch.setattr(kbuild, "kconfig_symbols", lambda tree: set())
    fragment = "CONFIG_SMP=y\n"
    kbuild.configure(tree, out, fragment, 1, False)
    kbuild.configure(tree, out, fragment, 1, False)
    assert runs == ["configuration"]
    (tree / "arch" / "Kconfig").write_text(
        "config SMP\n\tbool\nconfig SYSCALL_USER_DISPATCH\n\tdef_bool y\n")
    kbuild.configure(tree, out, fragment, 1, False)
    assert runs == ["configuration"] * 2
    kbuild.configure(tree, out, "CONFIG_SMP=y\n# two\n", 1, False)
    assert len(runs) == 3
