"""stormsuite.arm64: Debian's arm64 kernels and guest root, without a
network (what can be checked before anything is fetched)."""

import pytest

from stormsuite.kernel import arm64


def test_host_sources_without_the_low_priority_suites(tmp_path):
    """The private apt reads the host's mirrors and keys, not the suites
    setup adds pinned at priority 1 (their kernels would win unpinned),
    nor files apt itself ignores."""
    (tmp_path / "sources.list").write_text("deb http://mirror/debian x main\n")
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "debian.sources").write_text("Types: deb\n")
    (parts / "storm-trixie-backports.sources").write_text("Types: deb\n")
    (parts / "old.list.disabled-by-farm").write_text("deb x\n")
    assert arm64.host_sources(tmp_path) == {
        "host.list": "deb http://mirror/debian x main\n",
        "debian.sources": "Types: deb\n"}


def test_releases_by_series(tmp_path, monkeypatch):
    boot = tmp_path / "boot"
    boot.mkdir()
    for r in ("6.1.0-56-arm64", "6.12.117+deb12-arm64"):
        (boot / f"vmlinuz-{r}").touch()
    (boot / "config-6.1.0-56-arm64").touch()
    monkeypatch.setattr(arm64, "ROOT", tmp_path)
    assert arm64.releases() == {"6.1": "6.1.0-56-arm64",
                                "6.12": "6.12.117+deb12-arm64"}


def test_no_host_sources_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(arm64, "APT", tmp_path / "apt")
    monkeypatch.setattr(arm64, "host_sources", lambda: {})
    with pytest.raises(arm64.Arm64Error, match="no apt sources"):
        arm64.apt_config()
