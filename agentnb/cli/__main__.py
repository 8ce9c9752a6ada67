"""``python -m agentnb.cli ...``: the same command as ``agentnb ...``."""

import sys

from agentnb.cli import main

sys.exit(main())
