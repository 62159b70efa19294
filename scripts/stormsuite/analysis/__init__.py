"""The statistics: the model of boots and runs, the verdicts that
compare and bisect state, their calibration and their simulation. Reads
numbers from runfiles; never boots, builds or prints a report.
"""
