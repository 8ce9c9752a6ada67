"""Draw to a file, from Python (:func:`draw`) or the command line (:func:`cli_draw`).

Both draw workflows, runs, state machines and machine instances; the command line also
draws a state-machine definition file (``.json``, ``.yaml``, ``.yml``) without running it.

Example:
    >>> import tempfile, pathlib
    >>> from agentnb.graph.builder import StateGraph
from agentnb.graph.targets import import_target
    >>> g = StateGraph("demo").add_node("a", lambda s: None).set_entry_point("a")
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "demo.dot"
    >>> draw(g, out).read_text().startswith("digraph agentnb {")
    True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentnb.errors import AgentnbError, DefinitionError, RenderError
from agentnb.graph.builder import StateGraph
from agentnb.graph.targets import import_target
from agentnb.graph.workflow import Workflow
from agentnb.render.extract import diagram_for
from agentnb.render.model import Direction
from agentnb.render.svg import TIMEOUT, render

if TYPE_CHECKING:
    from agentnb.fsm import StateMachine

__all__ = [
    "DEFINITION_SUFFIXES",
    "SUFFIXES",
    "cli_draw",
    "draw",
    "load_definition",
]

SUFFIXES = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
"""File suffix -> output format."""
DEFINITION_SUFFIXES = (".json", ".yaml", ".yml")
"""A ``cli_draw`` target with one of these suffixes is a state-machine definition file."""


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
    """Write the diagram of a StateGraph, Workflow, run, StateMachine or machine instance
    to ``path``; return the path.

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
    """``MODULE:ATTR`` -> what to draw (a function returning it is called); raises
    _UserError with a one-line explanation."""
    try:
        obj = import_target(target, _drawable)
    except DefinitionError as exc:
        raise _UserError(exc.problem) from None
    if callable(obj) and not _drawable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise _UserError(f"calling {target}() failed: {_describe(exc)}") from None
    if not _drawable(obj):
        raise _UserError(
            f"{target} is a {type(obj).__name__}, not a StateGraph or Workflow (nor a "
            "StateMachine, a machine instance, or a function returning one of these)"
        )
    return obj


def _drawable(obj: object) -> bool:
    """True for what ``agentnb draw`` draws: a workflow, a state machine or an instance."""
    if isinstance(obj, StateGraph | Workflow):
        return True
    from agentnb.fsm import MachineInstance, StateMachine

    return isinstance(obj, StateMachine | MachineInstance)


class _UserError(Exception):
    """A mistake in the command line: reported in one line, exit status 2."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _placeholder(role: str, name: str) -> Callable[[object, object], Any]:
    """Stands in for a registry function a definition file names; refuses to run."""

    def placeholder(context: object, payload: object) -> Any:
        raise DefinitionError(
            f"{role} {name!r} is a placeholder: this machine was loaded for drawing only",
            culprit=name,
            fix="Load the file with load_machine(path, registry={...}) to run it",
        )

    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder


def _registry_names(data: object) -> dict[str, str]:
    """Every guard, action and hook name a parsed definition uses -> its role."""
    names: dict[str, str] = {}
    if not isinstance(data, dict):
        return names
    for key, roles in (("states", ("on_enter", "on_exit")), ("transitions", ("guard", "action"))):
        items = data.get(key)
        for item in items if isinstance(items, list) else []:
            for role in roles:
                name = item.get(role) if isinstance(item, dict) else None
                if isinstance(name, str):
                    names.setdefault(name, role)
    return names


def load_definition(path: str | os.PathLike[str]) -> StateMachine | StateGraph:
    """The workflow or state machine a definition file describes, for drawing: structure only.

    The command line has no registry, so each guard, action and hook the file names
    becomes a placeholder of that name (drawn as such) that raises if it is ever called.

    Raises:
        SchemaError: the file cannot be read or parsed, or breaks the schema or the rules;
            ``problems`` lists every problem, as :func:`agentnb.fsm.validate_file` does.
        MissingDependency: ``jsonschema`` (or ``pyyaml`` for YAML) is not installed.
    """
    from agentnb.fsm import load_machine
    from agentnb.fsm.document import parse_document, read_source
    from agentnb.graph.loader import definition_file_kind, outline_workflow

    if definition_file_kind(Path(path)) == "workflow":
        return outline_workflow(Path(path))
    content, label, fmt = read_source(Path(path))
    data = parse_document(content, source=label, format=fmt).data
    # Every name resolves, so the only problems left are those of the file's structure.
    registry = {name: _placeholder(role, name) for name, role in _registry_names(data).items()}
    return load_machine(Path(path), registry=registry)


def _is_file(path: str) -> bool:
    """Whether ``path`` names a file; the operating system's refusal (a name too long) is
    the user's mistake, said in one line."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError) as exc:
        raise _UserError(f"{path!r}: {getattr(exc, 'strerror', None) or exc}") from None


def cli_draw(
    target: str,
    output: str,
    *,
    direction: str = "LR",
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``agentnb draw TARGET OUTPUT``: draw a workflow or state machine to a file.

    ``TARGET`` is ``MODULE:ATTR``, where ``ATTR`` is a StateGraph, Workflow, StateMachine,
    machine instance or a function returning one (the module is imported from the current
    directory), or the path of a state-machine definition file (``.json``, ``.yaml``,
    ``.yml``), drawn without a registry (see ``load_definition``). ``OUTPUT`` ``-``
    prints the DOT text.

    Returns:
        0 when written; 2 for a mistake in the arguments or the target (one-line message,
        no traceback); 1 when drawing failed (a definition file with problems, each listed;
        Graphviz missing or failing; file not writable).
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
        is_file = target.lower().endswith(DEFINITION_SUFFIXES)
        if is_file and not _is_file(target):
            raise _UserError(f"no definition file {target!r}")
        obj = None if is_file else _import_target(target)
    except _UserError as exc:
        print(f"agentnb draw: error: {exc}", file=err)
        return 2
    way: Direction = "TB" if direction == "TB" else "LR"
    try:
        if obj is None:
            obj = load_definition(target)
        if output == "-":
            out.write(render(diagram_for(obj, direction=way), "dot").decode("utf-8"))
            return 0
        path = draw(obj, output, direction=way)
    except (AgentnbError, OSError) as exc:
        print(f"agentnb draw: error: {exc}", file=err)
        return 1
    print(f"wrote {path}", file=out)
    return 0
