"""What a run leaves, read: the modules' result files, /proc/interrupts,
instruction counts, dmesg, traces and the environment, made into one run
file per run (runfile), loaded as sets (runs, sets, lkproot) and named as
metrics (metrics, lkpstats). The bottom layer: it imports nothing of the
suite but the storm registry, and what runs in a guest or on a box
(runfile, lkpstats) needs the standard library only.
"""
