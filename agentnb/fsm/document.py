"""The old home of :mod:`agentnb.definitions.document`, kept so its imports keep working."""

import agentnb.definitions.document as _document
from agentnb.definitions.document import *  # noqa: F403  (the same names, not copies)

__all__ = _document.__all__
