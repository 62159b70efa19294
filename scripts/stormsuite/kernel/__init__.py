"""Kernels to boot: Debian's (installed, fetched for arm64) and those
built from a source tree (kbuild), through the one source directory ab
and bisect share (source). Knows nothing of storms or statistics.
"""
