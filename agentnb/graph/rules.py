"""The structural rules of a workflow graph, written once for code and files alike.

:func:`agentnb.graph.workflow._validate` raises the first finding as a
:class:`~agentnb.errors.DefinitionError`; the loader turns every finding into a
:class:`~agentnb.errors.SchemaProblem` at its JSON path. A graph built in Python and the
same graph loaded from a file are refused for the same reasons.

The words differ only where the two audiences name things differently: code calls
``set_entry_point`` and ``add_interrupt_before`` and is told which ``add_node`` call is
missing; a file has an ``"entry"`` key and ``interrupt_before`` list and is told the JSON
path of the declaration it clashes with and the closest known name.

Paths are tuples of keys and indexes into the file form (``("edges", 2, "target")``); for
a graph built in code the indexes are declaration order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

from agentnb._json import json_path
from agentnb.definitions.findings import Finding, Path
from agentnb.definitions.names import suggest
from agentnb.graph.builder import END, RESERVED, START

__all__ = [
    "BranchSpec",
    "EdgeSpec",
    "Finding",
    "Form",
    "InterruptSpec",
    "JoinSpec",
    "check_graph",
    "suggest",
]

Form: TypeAlias = Literal["code", "file"]
EdgeSpec: TypeAlias = tuple[int, str, str]
"""``(index, source, target)`` of a plain edge."""
BranchSpec: TypeAlias = tuple[int, str, Sequence[str] | Mapping[str, str]]
"""``(index, source, targets)`` of a conditional edge; targets as declared (list or mapping)."""
InterruptSpec: TypeAlias = tuple[int, str]
"""``(index, node)`` of an interrupt."""
JoinSpec: TypeAlias = tuple[int, Sequence[str], str]
"""``(index, sources, target)`` of a join; in a file it is an edge whose source is a list."""


def check_graph(
    nodes: Sequence[str],
    entry: str | None,
    edges: Sequence[EdgeSpec] = (),
    branches: Sequence[BranchSpec] = (),
    interrupts_before: Sequence[InterruptSpec] = (),
    interrupts_after: Sequence[InterruptSpec] = (),
    *,
    form: Form = "file",
    complete: bool = True,
    joins: Sequence[JoinSpec] = (),
) -> list[Finding]:
    """Every broken rule, in order: nodes, entry, edges, conditional edges, interrupts.

    Args:
        nodes: node names in declaration order. A node's name is at ``("nodes", i, "name")``
            (a file that names a node with a bare string has it at ``("nodes", i)``).
        entry: the node runs start at, if one was named.
        edges: plain edges (several from one node fan out); joins: edges from a list of
            sources (in a file, at ``("edges", i)`` too); branches: conditional edges;
            interrupts_before/after: the nodes to pause at, each with its index.
        form: ``"code"`` words the findings for a :class:`StateGraph`, ``"file"`` for a
            workflow file (see the module docstring).
        complete: ``False`` when some parts were left out because they have problems of
            their own: reachability is then not judged, since nodes that only those parts
            lead to would be called unreachable. It is judged last, and only when nothing
            else is wrong.
    """
    if not nodes:
        fix = "Add one with add_node(name, fn)"
        return [Finding(("nodes",), "the graph has no nodes", fix, "")]
    rules = _Rules(nodes, form)
    rules.check_nodes()
    rules.check_entry(entry)
    plain = rules.check_edges(edges)
    following = rules.check_branches(branches, plain)
    rules.check_joins(joins, following)
    rules.check_interrupts("before", interrupts_before)
    rules.check_interrupts("after", interrupts_after)
    if rules.findings or not complete or entry is None:
        return rules.findings
    return _unreachable(nodes, entry, following)


class _Rules:
    """The rules' shared vocabulary: which names are nodes, and how to word a finding."""

    def __init__(self, nodes: Sequence[str], form: Form) -> None:
        self.nodes = nodes
        self.known = set(nodes) - RESERVED  # START and END are never nodes, even if declared
        self.form = form
        self.findings: list[Finding] = []

    def add(self, path: Path, message: str, fix: str, culprit: str) -> None:
        self.findings.append(Finding(path, message, fix, culprit))

    def at(self, path: Path) -> str:
        """Where the declaration another one clashes with is: only files have places."""
        return f"at {json_path(path)}" if self.form == "file" else ""

    def check_name(self, path: Path, name: str, what: str, *, end_ok: bool = True) -> bool:
        """Whether ``name`` is a node (or ``END``, when ``end_ok``); a finding if not."""
        if name in self.known or (end_ok and name == END):
            return True
        if self.form == "file":
            fix = suggest(name, self.known) + (" (or END)" if end_ok else "")
        else:
            listing = f"{sorted(self.known)}" + (" or END" if end_ok else "")
            fix = f"Add it with add_node({name!r}, fn), or use one of {listing}"
        self.add(path, f"{what} names {name!r}, which is not a node", fix, name)
        return False

    def check_nodes(self) -> None:
        first: dict[str, int] = {}
        for i, name in enumerate(self.nodes):
            if name in RESERVED:
                message = f"{name!r} is reserved and cannot name a node"
                self.add(("nodes", i, "name"), message, "Pick another name", name)
            elif name in first:
                message = (
                    f"node {name!r} is already defined{_aside(self.at(('nodes', first[name])))}"
                )
                self.add(("nodes", i, "name"), message, "Rename one", name)
            first.setdefault(name, i)

    def check_entry(self, entry: str | None) -> None:
        if entry is None:
            fix = f"Call set_entry_point({self.nodes[0]!r}) (or the node runs start at)"
            self.add(("entry",), "the graph has no entry point", fix, "")
        elif self.form == "file":
            self.check_name(("entry",), entry, "the entry", end_ok=False)
        elif entry not in self.known:
            fix = f"Add it with add_node({entry!r}, fn) or enter at one of {sorted(self.known)}"
            self.add(("entry",), f"the entry point {entry!r} is not a node", fix, entry)

    def check_edges(self, edges: Sequence[EdgeSpec]) -> dict[str, list[tuple[int, str]]]:
        """The rules of plain edges; returns each source's edges, ``(index, target)``."""
        plain: dict[str, list[tuple[int, str]]] = {}
        for i, source, target in edges:
            what = f"the edge {source!r} -> {target!r}"
            if source == START:
                code_fix = f"Call set_entry_point({target!r})"
                fix = f'Write "entry": {target!r}' if self.form == "file" else code_fix
                self.add(("edges", i, "source"), f"{what} leaves START", fix, source)
            else:
                self.check_name(("edges", i, "source"), source, what, end_ok=False)
            self.check_name(("edges", i, "target"), target, what)
            same = [j for j, other in plain.get(source, []) if other == target]
            if same:
                aside = _aside(self.at(("edges", same[0])))
                fix = "Remove the duplicate (several edges from one node fan out)"
                self.add(("edges", i), f"{what} is declared twice{aside}", fix, source)
            plain.setdefault(source, []).append((i, target))
        return plain

    def check_joins(self, joins: Sequence[JoinSpec], following: dict[str, list[str]]) -> None:
        """The rules of joins; each source can lead to the join's target."""
        for i, sources, target in joins:
            what = f"the join {list(sources)!r} -> {target!r}"
            for k, source in enumerate(sources):
                if self.check_name(("edges", i, "source", k), source, what, end_ok=False):
                    following.setdefault(source, []).append(target)
            self.check_name(("edges", i, "target"), target, what)

    def check_branches(
        self, branches: Sequence[BranchSpec], plain: dict[str, list[tuple[int, str]]]
    ) -> dict[str, list[str]]:
        """The rules of conditional edges; returns where each node can go next."""
        following = {source: [t for _, t in edges] for source, edges in plain.items()}
        first: dict[str, int] = {}
        for k, source, targets in branches:
            here: Path = ("conditional_edges", k)
            what = f"a conditional edge from {source!r}"
            if self.check_name((*here, "source"), source, what, end_ok=False):
                # A plain edge beside it is fine: both apply, as in LangGraph.
                if source in first:
                    aside = _aside(self.at(("conditional_edges", first[source])))
                    self.add(
                        (*here, "source"),
                        f"node {source!r} already has a conditional edge{aside}",
                        "Merge the routers into one that returns every outcome",
                        source,
                    )
                first.setdefault(source, k)
            pairs = targets.items() if isinstance(targets, Mapping) else enumerate(targets)
            listed: set[str] = set()
            for key, target in pairs:
                path = (*here, "targets", key)
                what = f"the conditional edge from {source!r}"
                # A mapping may send several outcomes to one node; a list names each once.
                if (
                    self.check_name(path, target, what)
                    and isinstance(key, int)
                    and target in listed
                ):
                    self.add(
                        path, f"target {target!r} is listed twice", "Remove the duplicate", target
                    )
                listed.add(target)
                following.setdefault(source, []).append(target)
        return following

    def check_interrupts(self, kind: str, interrupts: Sequence[InterruptSpec]) -> None:
        for i, name in interrupts:
            path = (f"interrupt_{kind}", i)
            if self.form == "file":
                self.check_name(path, name, f"interrupt_{kind}", end_ok=False)
            elif name not in self.known:
                message = f"add_interrupt_{kind}({name!r}) names a node that does not exist"
                self.add(path, message, f"Use one of {sorted(self.known)}", name)


def _aside(*parts: str) -> str:
    """`` (a, b)`` of the parts that are not empty; nothing when all are."""
    shown = [part for part in parts if part]
    return f" ({', '.join(shown)})" if shown else ""


def _unreachable(
    nodes: Sequence[str], entry: str, following: dict[str, list[str]]
) -> list[Finding]:
    seen, frontier = {entry}, [entry]
    while frontier:
        for nxt in following.get(frontier.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return [
        Finding(
            ("nodes", i),
            f"node {name!r} cannot be reached from the entry point {entry!r}",
            "Add an edge that leads there, or remove the node",
            name,
        )
        for i, name in enumerate(nodes)
        if name not in seen
    ]
