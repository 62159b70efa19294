"""A storm's machine-readable result: flat "name: value" lines.

The modules write it to /sys/kernel/debug/<storm>/result. Histograms are
"<prefix>.hist: low:count low:count ..." with log-linear buckets (16 per
power of two, see include/storm.h); percentiles are computed here.
"""

from __future__ import annotations

import dataclasses
import re

HIST_SUB_BITS = 4
HIST_SUB = 1 << HIST_SUB_BITS


class ResultError(ValueError):
    pass


def parse(text: str) -> dict[str, str]:
    """name -> value (strings); later duplicates are an error."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(": ")
        if not sep:
            if line.endswith(":"):
                name, value = line[:-1], ""
            else:
                raise ResultError(f"line {n}: not 'name: value': {line!r}")
        if name in out:
            raise ResultError(f"line {n}: {name} given twice")
        out[name] = value.strip()
    for key in ("storm", "schema", "status"):
        if key not in out:
            raise ResultError(f"no {key}: line; not a storm result")
    return out


def bucket_width(low: int) -> int:
    """Width of the bucket whose lower bound is low (mirrors storm.h)."""
    if low < HIST_SUB:
        return 1
    return 1 << (low.bit_length() - 1 - HIST_SUB_BITS)


@dataclasses.dataclass
class Histogram:
    buckets: list[tuple[int, int]]   # (lower bound ns, count), ascending
    count: int
    min_ns: int
    max_ns: int
    mean_ns: int

    def percentile(self, p: float) -> float:
        """Value at percentile p (0..100): the middle of the bucket that
        holds it, clamped to the observed min and max."""
        if not 0 <= p <= 100:
            raise ValueError(f"percentile {p} outside 0..100")
        total = sum(c for _, c in self.buckets)
        if not total:
            return 0.0
        rank = max(1, -(-total * p // 100))   # ceil, at least the first
        seen = 0
        for low, c in self.buckets:
            seen += c
            if seen >= rank:
                mid = low + (bucket_width(low) - 1) / 2
                return float(min(max(mid, self.min_ns), self.max_ns))
        return float(self.max_ns)

    def median(self) -> float:
        """The median, interpolated within its bucket as if the bucket's
        samples were spread evenly over it: a bucket is 1/16 of its octave
        (up to 6%), too coarse to compare boots by its middle."""
        total = sum(c for _, c in self.buckets)
        if not total:
            return 0.0
        seen = 0
        for low, c in self.buckets:
            if seen + c >= total / 2:
                at = low + bucket_width(low) * (total / 2 - seen) / c
                return float(min(max(at, self.min_ns), self.max_ns))
            seen += c
        return float(self.max_ns)


def histogram(res: dict[str, str], prefix: str = "latency") -> Histogram | None:
    raw = res.get(f"{prefix}.hist")
    if raw is None:
        return None
    buckets = []
    for item in raw.split():
        m = re.fullmatch(r"(\d+):(\d+)", item)
        if not m:
            raise ResultError(f"{prefix}.hist: bad bucket {item!r}")
        buckets.append((int(m.group(1)), int(m.group(2))))
    buckets.sort()
    return Histogram(buckets=buckets,
                     count=int(res.get(f"{prefix}.count", 0)),
                     min_ns=int(res.get(f"{prefix}.min_ns", 0)),
                     max_ns=int(res.get(f"{prefix}.max_ns", 0)),
                     mean_ns=int(res.get(f"{prefix}.mean_ns", 0)))


def per_cpu(res: dict[str, str], field: str,
            source: str = "irq") -> dict[int, int]:
    """e.g. per_cpu(res, "CAL") from irq.<cpu>.CAL lines (received);
    per_cpu(res, "CAL", "sent") from sent.<cpu>.CAL (sent to the CPU),
    "sent_by" (sent from it); "handled" from handled.<cpu> lines."""
    out = {}
    pat = re.compile(rf"{source}\.(\d+)\.{re.escape(field)}$"
                     if field.isupper() else rf"{re.escape(field)}\.(\d+)$")
    for name, value in res.items():
        m = pat.match(name)
        if m:
            out[int(m.group(1))] = int(value)
    return out


def senders(res: dict[str, str]) -> dict[int, dict[str, str]]:
    """sender.<cpu>.<field> -> {cpu: {field: value}}."""
    out: dict[int, dict[str, str]] = {}
    for name, value in res.items():
        m = re.match(r"sender\.(\d+)\.(.+)$", name)
        if m:
            out.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return out


def cpulist(text: str) -> list[int]:
    """"0-3,8" -> [0, 1, 2, 3, 8]; "" -> []."""
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus
