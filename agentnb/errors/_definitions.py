"""Errors in a definition: a graph, a machine, a JSON/YAML or SCXML document."""

from __future__ import annotations

from collections.abc import Sequence

from agentnb.errors._root import AgentnbError


class DefinitionError(AgentnbError):
    """A workflow or state-machine definition is invalid.

    Attributes:
        culprit: the node, edge or state at fault (``None`` when the whole definition is).
        fix: what to change.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = StateGraph("typo").add_node("a", lambda state: {}).set_entry_point("a")
        >>> graph.add_edge("a", "b").compile()  # there is no node b
        Traceback (most recent call last):
        ...
        agentnb.errors.DefinitionError: ...'b'...
    """

    def __init__(self, problem: str, *, culprit: str | None = None, fix: str = "") -> None:
        self.problem = problem
        self.culprit = culprit
        self.fix = fix
        super().__init__(f"{problem}. {fix}" if fix else problem)


class ScxmlError(DefinitionError):
    """An SCXML document cannot be read.

    Attributes:
        line: the line of the element at fault (``None`` when the document is not XML).
        source: the file name, when it came from a file.

    Example:
        >>> from agentnb import ScxmlError, load_scxml
        >>> try:
        ...     load_scxml("<scxml xmlns='http://www.w3.org/2005/07/scxml'><state id='a'>\\n")
        ... except ScxmlError as error:
        ...     print(type(error).__name__)
        ScxmlError
    """

    def __init__(
        self, problem: str, *, line: int | None, source: str | None = None, fix: str = ""
    ) -> None:
        self.line = line
        self.source = source
        where = f"{source or 'SCXML'}" + (f" line {line}" if line is not None else "")
        super().__init__(f"{where}: {problem}", culprit=where, fix=fix)


class UnsupportedElement(ScxmlError):
    """An SCXML element (or a ``<send>`` target/type) agentnb does not run; nothing is skipped.

    Attributes:
        element: the element's name (``invoke``, ``script`` ...), or ``send`` for a target.

    Example:
        >>> from agentnb import ScxmlError, UnsupportedElement, load_scxml
        >>> document = (
        ...     '<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0">'
        ...     '<state id="a"><invoke type="http" src="x"/></state></scxml>'
        ... )
        >>> try:
        ...     load_scxml(document)
        ... except UnsupportedElement as error:
        ...     print(isinstance(error, ScxmlError))
        True
    """

    def __init__(
        self, element: str, *, line: int | None, source: str | None = None, detail: str = ""
    ) -> None:
        self.element = element
        what = detail or f"<{element}> is not supported"
        super().__init__(
            what,
            line=line,
            source=source,
            fix="Remove it or replace it with supported elements (state, parallel, final, "
            "history, transition, onentry/onexit, raise, send between SCXML sessions, "
            "cancel, assign, log, if, foreach, datamodel, invoke of an inline <scxml>)",
        )


class SchemaProblem:
    """One problem found in a JSON/YAML definition, at a JSON path like ``$.states[2]``.

    Example:
        >>> from agentnb.fsm import validate_file
        >>> problems = validate_file('{"name": "m", "states": ["a"], "initial": "b"}')
        >>> [(problem.path, problem.message) for problem in problems]
        [('$.initial', ...)]
    """

    __slots__ = ("fix", "message", "path")

    def __init__(self, path: str, message: str, fix: str = "") -> None:
        self.path = path
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" + (f" ({self.fix})" if self.fix else "")

    def __repr__(self) -> str:
        return f"SchemaProblem({self.path!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaProblem) and (self.path, self.message, self.fix) == (
            other.path,
            other.message,
            other.fix,
        )

    def __hash__(self) -> int:
        return hash((self.path, self.message, self.fix))


class SchemaError(DefinitionError):
    """A JSON/YAML definition is invalid; ``problems`` lists every problem found at once.

    Example:
        >>> from agentnb import SchemaError
        >>> from agentnb.fsm import load_machine
        >>> try:
        ...     load_machine('{"name": "m", "states": ["a"], "initial": "b"}')
        ... except SchemaError as error:
        ...     print([problem.path for problem in error.problems])
        ['$.initial']
    """

    def __init__(self, problems: Sequence[SchemaProblem], *, source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(
            f"{count} problem{'s' if count != 1 else ''}{where}:\n{lines}",
            culprit=source,
        )
        # The message above already carries every fix; keep str() free of a trailing fix.
        self.args = (f"{count} problem{'s' if count != 1 else ''}{where}:\n{lines}",)


class IncompatibleWorkflow(DefinitionError):
    """A stored run was made by a workflow of a different shape than the one resuming it.

    Example:
        >>> from agentnb import IncompatibleWorkflow
        >>> error = IncompatibleWorkflow("r1", "node 'review' no longer exists")
        >>> error.run_id, error.reason
        ('r1', "node 'review' no longer exists")
    """

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(
            f"run {run_id!r} cannot be driven by this workflow: {reason}",
            culprit=run_id,
            fix="Rebuild the workflow with the same nodes, edges and interrupts as when the "
            "run started, or start a new run.",
        )


class IncompatibleMachine(DefinitionError):
    """A stored machine instance does not fit the definition trying to drive it.

    Example:
        >>> from agentnb import IncompatibleMachine
        >>> error = IncompatibleMachine("door-1", "state 'ajar' no longer exists")
        >>> error.instance_id
        'door-1'
    """

    def __init__(self, instance_id: str, reason: str) -> None:
        self.instance_id = instance_id
        self.reason = reason
        super().__init__(
            f"instance {instance_id!r} cannot follow this machine: {reason}",
            culprit=instance_id,
            fix="Keep the instance's current state in the new definition, or start a new instance.",
        )
