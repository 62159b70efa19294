"""python3 -m stormsuite SUBCOMMAND ... (what scripts/storm calls)."""

import sys

from . import cli

sys.exit(cli.main(sys.argv[1:]))
