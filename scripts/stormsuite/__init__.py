"""The storm suite's drivers: guest runner, parsers, comparison, bisect."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
