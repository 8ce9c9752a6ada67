"""``python -m agentnb ...``: the same command as ``agentnb ...`` (see :mod:`agentnb.cli`)."""

from __future__ import annotations

import sys

from agentnb.cli import main

if __name__ == "__main__":
    sys.exit(main())
