"""The box's settings that move the numbers: parsed from a run's capture,
and what a comparison makes of them.

storm-run captures them (scripts/storm-run-checks.sh sysenv) as
"PATH<TAB>FIRST LINE" lines of sysfs files; fields() turns them into the
run file's env fields:

  cpufreq_governor     the scaling governors of every CPU (distinct, sorted;
                       "none" without cpufreq), cpufreq_driver cpu0's driver
  turbo                on / off (intel_pstate no_turbo, cpufreq boost) or
                       unknown
  smt, smt_active      /sys/devices/system/cpu/smt/control and active
  microcode            cpu0's microcode revision, or unknown
  cstates              cpu0's idle states, in order; cstates_disabled the
                       ones turned off in sysfs
  cstate_limits        what the command line limits them with: idle=,
                       cpuidle.off=, intel_idle.max_cstate=,
                       processor.max_cstate=, intel_idle.states_off=
  cstate_max           the intel_idle and processor modules' max_cstate
                       (their defaults where nothing set them; absent from
                       kernels built without them)
  isolcpus, nohz_full  the CPUs isolated and in full nohz ("" for none)
  mitigations          the command line's mitigations= (auto when absent)
  vulnerabilities      every /sys/devices/system/cpu/vulnerabilities file
                       as name=status, "; " between
  thp, thp_defrag      transparent hugepages, the [selected] setting
  lockdown, sig_enforce  lockdown level and module signature enforcement
                       (storm-run refuses to start under either with an
                       unsigned module)

The kernel config hash (env.kernel_config) is captured beside them.

A comparison refuses (mismatches(), unless --force) sides whose settings
differ where they move the numbers: governor, turbo and THP always; SMT,
isolated and nohz_full CPUs, C-state limits and mitigations= only when
the sides were booted with the same arguments (env.boot_args): a matrix
over boot arguments differs there by design, and its labels say so.
Differences that come with the kernel itself (the vulnerabilities'
status text, the idle states a driver offers, the config hash) and the
microcode are warnings (warnings()). A field either side does not know
(run files from before these fields, "unknown") is not compared.

Standard library only, Python 3.7 and later: runfile.py imports it in
guests and on boxes.
"""

from __future__ import annotations

from typing import Any, Iterable

CPU = "/sys/devices/system/cpu/"
UNKNOWN = "unknown"
# the command line's words that limit the idle states
CSTATE_ARGS = ("idle", "cpuidle.off", "intel_idle.max_cstate",
               "processor.max_cstate", "intel_idle.states_off")
# refused when they differ, whatever the boot arguments
MUST_MATCH = ("cpufreq_governor", "turbo", "thp", "cstates_disabled")
# refused when they differ between sides booted with the same arguments
MUST_MATCH_SAME_BOOT = ("smt", "isolcpus", "nohz_full", "cstate_limits",
                        "mitigations")
# said, not refused
SHOULD_MATCH = ("microcode", "cpufreq_driver", "smt_active", "cstates",
                "cstate_max", "vulnerabilities", "thp_defrag")


def parse(text: str) -> dict[str, str]:
    """PATH -> first line, from storm-run's sysenv capture."""
    out = {}
    for line in text.splitlines():
        path, tab, value = line.partition("\t")
        if tab:
            out[path] = value.strip()
    return out


def selected(choice: str) -> str:
    """The [selected] word of 'always [madvise] never'; the text as it is
    when nothing is bracketed."""
    if "[" in choice and "]" in choice:
        return choice.split("[", 1)[1].split("]", 1)[0]
    return choice


def _cpu_index(path: str) -> int:
    name = path[len(CPU):].split("/", 1)[0]
    return int(name[3:]) if name[3:].isdigit() else -1


def _state_index(path: str) -> int:
    part = [p for p in path.split("/") if p.startswith("state")][0]
    return int(part[5:]) if part[5:].isdigit() else -1


def fields(text: str, cmdline: str = "") -> dict[str, Any]:
    """The env fields (module docstring) of a sysenv capture and the
    kernel command line."""
    files = parse(text)
    args = cmdline.split()
    governors = sorted({v for p, v in files.items()
                        if p.startswith(CPU + "cpu")
                        and p.endswith("/cpufreq/scaling_governor")})
    no_turbo = files.get(CPU + "intel_pstate/no_turbo")
    boost = files.get(CPU + "cpufreq/boost")
    if no_turbo in ("0", "1"):
        turbo = "off" if no_turbo == "1" else "on"
    elif boost in ("0", "1"):
        turbo = "on" if boost == "1" else "off"
    else:
        turbo = UNKNOWN
    names = {}
    disabled = set()
    for path, value in files.items():
        if path.startswith(CPU + "cpu0/cpuidle/state"):
            i = _state_index(path)
            if path.endswith("/name"):
                names[i] = value
            elif path.endswith("/disable") and value not in ("", "0"):
                disabled.add(i)
    cstate_max = [f"{mod}.max_cstate={files[p]}" for mod, p in (
        ("intel_idle", "/sys/module/intel_idle/parameters/max_cstate"),
        ("processor", "/sys/module/processor/parameters/max_cstate"))
        if p in files]
    limits = [a for a in args if a.partition("=")[0] in CSTATE_ARGS]
    mitigations = next((a.partition("=")[2] for a in reversed(args)
                        if a.startswith("mitigations=")), "auto")
    vulns = sorted(f"{p.rsplit('/', 1)[1]}={v}" for p, v in files.items()
                   if p.startswith(CPU + "vulnerabilities/"))
    nohz = files.get(CPU + "nohz_full", "")
    lockdown = files.get("/sys/kernel/security/lockdown")
    return {
        "cpufreq_governor": ",".join(governors) or "none",
        "cpufreq_driver": files.get(CPU + "cpu0/cpufreq/scaling_driver",
                                    "none"),
        "turbo": turbo,
        "smt": files.get(CPU + "smt/control", UNKNOWN),
        "smt_active": files.get(CPU + "smt/active", UNKNOWN),
        "microcode": files.get(CPU + "cpu0/microcode/version", UNKNOWN),
        "cstates": " ".join(names[i] for i in sorted(names)) or "none",
        "cstates_disabled": " ".join(names.get(i, f"state{i}")
                                     for i in sorted(disabled)),
        "cstate_limits": " ".join(limits),
        "cstate_max": " ".join(cstate_max),
        "isolcpus": files.get(CPU + "isolated", ""),
        "nohz_full": "" if nohz == "(null)" else nohz,
        "mitigations": mitigations,
        "vulnerabilities": "; ".join(vulns) or UNKNOWN,
        "thp": selected(files.get("/sys/kernel/mm/transparent_hugepage/"
                                  "enabled", UNKNOWN)),
        "thp_defrag": selected(files.get("/sys/kernel/mm/"
                                         "transparent_hugepage/defrag",
                                         UNKNOWN)),
        "lockdown": selected(lockdown) if lockdown is not None else UNKNOWN,
        "sig_enforce": files.get("/sys/module/module/parameters/sig_enforce",
                                 UNKNOWN),
    }


# ---------------------------------------------------------------------
# What a comparison makes of them (verdict.env_mismatches, env_warnings)

def _values(runs: Iterable[dict[str, Any]], name: str) -> set[str]:
    return {str(r.get("env", {}).get(name, UNKNOWN)) for r in runs}


def _known(vals: set[str]) -> bool:
    return UNKNOWN not in vals


def _differ(sets: list, names: Iterable[str], same_boot_only: bool = False
            ) -> list[str]:
    out = []
    base = sets[0]
    for s in sets[1:]:
        if same_boot_only and _values(base.runs, "boot_args") != \
                _values(s.runs, "boot_args"):
            continue
        for name in names:
            a, b = _values(base.runs, name), _values(s.runs, name)
            if a != b and _known(a) and _known(b):
                out.append(f"{name}: {base.label} has "
                           f"{', '.join(sorted(a)) or '(none)'}, {s.label} "
                           f"has {', '.join(sorted(b)) or '(none)'}")
    return out


def mismatches(sets: list) -> list[str]:
    """The settings that differ between the sides in a way that moves the
    numbers: a comparison refuses them unless forced."""
    return _differ(sets, MUST_MATCH) \
        + _differ(sets, MUST_MATCH_SAME_BOOT, same_boot_only=True)


def warnings(sets: list) -> list[str]:
    """The settings that differ and are only said; and KVM guests whose
    vCPUs were overcommitted or not pinned."""
    out = [f"environments differ in {x}"
           for x in _differ(sets, SHOULD_MATCH)]
    for s in sets:
        if "kvm" not in _values(s.runs, "accel"):
            continue
        notes = sorted(_values(s.runs, "vcpu_placement") - {"", UNKNOWN})
        if "yes" in _values(s.runs, "vcpus_overcommitted") or \
                "no" in _values(s.runs, "vcpus_pinned"):
            out.append(f"{s.label}: KVM guest vCPUs "
                       f"{'; '.join(notes) or 'overcommitted or not pinned'}"
                       ": the PV TLB flush skips preempted vCPUs, so TLB "
                       "shootdown counts can read low against hardware")
    return out
