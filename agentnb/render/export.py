"""Draw to a file, from Python (:func:`draw`) or the command line (:func:`cli_draw`).

Example:
    >>> import tempfile, pathlib
    >>> from agentnb.graph.builder import StateGraph
    >>> g = StateGraph("demo").add_node("a", lambda s: None).set_entry_point("a")
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "demo.dot"
    >>> draw(g, out).read_text().startswith("digraph agentnb {")
    True
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import TextIO

from agentnb.errors import AgentnbError, RenderError
from agentnb.graph.builder import StateGraph
from agentnb.graph.workflow import Workflow
from agentnb.render.extract import diagram_for
from agentnb.render.model import Direction
from agentnb.render.svg import TIMEOUT, render

__all__ = ["SUFFIXES", "cli_draw", "draw"]

SUFFIXES = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
"""File suffix -> output format."""


def _format(path: Path) -> str:
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise RenderError(
            f"cannot tell the format of {str(path)!r}",
            fix=f"Name the file with one of {', '.join(SUFFIXES)}",
        )
    return fmt


def draw(
    obj: object,
    path: str | os.PathLike[str],
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
    timeout: float = TIMEOUT,
) -> Path:
    """Write the diagram of a StateGraph, Workflow or run to ``path``; return the path.

    The suffix picks the format: ``.svg``, ``.png``, ``.pdf`` (Graphviz needed) or
    ``.dot``/``.gv`` (DOT text, no Graphviz needed). ``timeout`` bounds each layout attempt
    in seconds (see :func:`~agentnb.render.svg.run_graphviz`).

    Raises:
        MissingDependency: the format needs Graphviz and ``dot`` is not installed.
        RenderError: the suffix is none of the above, or Graphviz failed.
    """
    target = Path(path)
    fmt = _format(target)
    diagram = diagram_for(obj, direction=direction, title=title, legend=legend)
    data = render(diagram, fmt, timeout=timeout)
    target.write_bytes(data)
    return target


def _import_target(target: str) -> object:
    """``MODULE:ATTR`` -> the object; raises _UserError with a one-line explanation."""
    module_name, sep, attr_path = target.partition(":")
    names = [*module_name.split("."), *attr_path.split(".")]
    if not sep or not all(n.isidentifier() for n in names):
        raise _UserError(
            f"target must look like MODULE:ATTR (e.g. flows.refund:graph), not {target!r}"
        )
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise _UserError(f"no module named {module_name!r} (looked in {cwd})") from None
        raise _UserError(f"importing {module_name!r} failed: {_describe(exc)}") from None
    except (Exception, SystemExit) as exc:
        raise _UserError(f"importing {module_name!r} failed: {_describe(exc)}") from None
    finally:
        if added:
            sys.path.remove(cwd)
    obj: object = module
    for i, name in enumerate(attr_path.split(".")):
        if not hasattr(obj, name):
            where = ".".join([module_name, *attr_path.split(".")[:i]])
            raise _UserError(f"{where!r} has no attribute {name!r}{_candidates(module)}")
        obj = getattr(obj, name)
    if callable(obj) and not isinstance(obj, StateGraph | Workflow):
        try:
            obj = obj()
        except Exception as exc:
            raise _UserError(f"calling {target}() failed: {_describe(exc)}") from None
    if not isinstance(obj, StateGraph | Workflow):
        raise _UserError(
            f"{target} is a {type(obj).__name__}, not a StateGraph or Workflow "
            "(or a function returning one)"
        )
    return obj


class _UserError(Exception):
    """A mistake in the command line: reported in one line, exit status 2."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _candidates(module: object) -> str:
    found = sorted(
        name for name, value in vars(module).items() if isinstance(value, StateGraph | Workflow)
    )
    return f" (it has: {', '.join(found)})" if found else ""


def cli_draw(
    target: str,
    output: str,
    *,
    direction: str = "LR",
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``agentnb draw MODULE:ATTR OUTPUT``: draw a workflow to a file; return the exit status.

    ``ATTR`` is a StateGraph, a Workflow or a function returning one; the module is
    imported from the current directory. ``OUTPUT`` ``-`` prints the DOT text.

    Returns:
        0 when written; 2 for a mistake in the arguments or the target (one-line message,
        no traceback); 1 when drawing failed (Graphviz missing or failing, file not writable).
    """
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        if direction not in ("LR", "TB"):
            raise _UserError(f"direction must be LR or TB, not {direction!r}")
        if output != "-":
            try:
                _format(Path(output))
            except RenderError as exc:
                raise _UserError(str(exc)) from None
        obj = _import_target(target)
    except _UserError as exc:
        print(f"agentnb draw: error: {exc}", file=err)
        return 2
    way: Direction = "TB" if direction == "TB" else "LR"
    try:
        if output == "-":
            out.write(render(diagram_for(obj, direction=way), "dot").decode("utf-8"))
            return 0
        path = draw(obj, output, direction=way)
    except (AgentnbError, OSError) as exc:
        print(f"agentnb draw: error: {exc}", file=err)
        return 1
    print(f"wrote {path}", file=out)
    return 0
