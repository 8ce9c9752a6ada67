"""Hypothesis strategies for fuzzing definition files (state machines and workflows alike)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st


def json_values(words: Sequence[str]) -> st.SearchStrategy[Any]:
    """Any JSON value, its strings and keys often drawn from ``words`` (the format's own)."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-5, max_value=30)
        | st.floats()
        | st.sampled_from(words)
        | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(words) | st.text(max_size=5), inner, max_size=5)
        ),
        max_leaves=25,
    )


@st.composite
def mutated(draw: st.DrawFn, valid: Path, words: Sequence[str]) -> Any:
    """The valid document ``valid`` with a few keys or items replaced, removed or repeated."""
    doc: Any = json.loads(valid.read_text())
    values = json_values(words)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        node = doc
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if not (isinstance(child, dict | list) and child and draw(st.booleans())):
                break
            node = child
        if not keys:
            continue
        operation = draw(st.sampled_from(["replace", "replace", "delete", "repeat"]))
        if operation == "delete":
            del node[key]
        elif operation == "repeat" and isinstance(node, list):
            node.append(node[key])
        else:
            node[key] = draw(st.sampled_from(words) | values)
    return doc
