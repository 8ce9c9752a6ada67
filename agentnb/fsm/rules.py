"""The rules a state-machine definition must follow, written once for code and files alike.

The builder (:class:`~agentnb.fsm.machine.StateMachine`) raises the first finding as a
:class:`~agentnb.errors.DefinitionError`; the loader turns every finding into a
:class:`~agentnb.errors.SchemaProblem` at its JSON path. Keeping the rules here means a
machine built in Python and the same machine loaded from JSON are refused for the same
reasons, in the same words.

Paths are tuples of keys and indexes into the file form (``("transitions", 3, "target")``);
for a machine built in code the indexes are declaration order.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agentnb.definitions.findings import Finding, Path
from agentnb.definitions.names import NAME_FIX, NAME_MAX_LENGTH, NAME_PATTERN, is_valid_name
from agentnb.definitions.names import suggest as _suggest_name

__all__ = [
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "EdgeSpec",
    "Finding",
    "check_edge",
    "check_edges",
    "check_graph",
    "check_states",
    "check_table",
    "is_valid_name",
]


@dataclass(frozen=True, slots=True)
class EdgeSpec:
    """What the rules need to know about a transition: its ends, its event, whether guarded."""

    index: int
    source: str
    event: str
    target: str
    guarded: bool

    def __str__(self) -> str:
        return f"{self.source} --{self.event}--> {self.target}"


def _suggest(name: str, known: Collection[str]) -> str:
    return _suggest_name(name, known, "states", sentence=False, none="")


def _name_finding(path: Path, what: str, name: str) -> Finding:
    return Finding(path, f"{what} {name!r} is not a valid name", NAME_FIX, name)


def check_states(states: Sequence[str], initial: str | None, final: Sequence[str]) -> list[Finding]:
    """Rules about the state list itself: names, duplicates, the initial and final states."""
    findings: list[Finding] = []
    if not states:
        findings.append(
            Finding(("states",), "the machine has no states", "Declare at least one state", "")
        )
    seen: set[str] = set()
    for j, state in enumerate(states):
        if not is_valid_name(state):
            findings.append(_name_finding(("states", j), "state", state))
        if state in seen:
            findings.append(
                Finding(
                    ("states", j),
                    f"state {state!r} is declared more than once",
                    "Remove the duplicate",
                    state,
                )
            )
        seen.add(state)
    if initial is None:
        findings.append(
            Finding(
                ("initial",),
                "the machine has no initial state",
                "Name the state new instances start in (initial=...)",
                "",
            )
        )
    elif initial not in seen and states:
        findings.append(
            Finding(
                ("initial",),
                f"initial state {initial!r} is not one of the states",
                _suggest(initial, states),
                initial,
            )
        )
    for k, name in enumerate(final):
        if name not in seen:
            findings.append(
                Finding(
                    ("final", k),
                    f"final state {name!r} is not one of the states",
                    _suggest(name, states),
                    name,
                )
            )
    return findings


def check_edge(
    edge: EdgeSpec,
    states: Collection[str],
    final: Collection[str],
    fallback: EdgeSpec | None,
) -> list[Finding]:
    """Rules about one transition.

    ``fallback`` is the unguarded transition declared earlier for the same source and event,
    if there is one: nothing may follow it.
    """
    findings: list[Finding] = []
    at: Path = ("transitions", edge.index)
    culprit = str(edge)
    for end in ("source", "target"):
        name = edge.source if end == "source" else edge.target
        if name not in states:
            findings.append(
                Finding(
                    (*at, end),
                    f"transition {culprit} has unknown {end} state {name!r}",
                    _suggest(name, states),
                    culprit,
                )
            )
    if not is_valid_name(edge.event):
        findings.append(_name_finding((*at, "event"), "event", edge.event))
    if edge.source in final:
        findings.append(
            Finding(
                (*at, "source"),
                f"final state {edge.source!r} has an outgoing transition ({culprit})",
                f"Remove the transition, or remove {edge.source!r} from the final states",
                culprit,
            )
        )
    if fallback is not None:
        other = fallback
        if edge.guarded:
            message = (
                f"transition {culprit} comes after the unguarded transition #{other.index} "
                f"({other}) for the same state and event, so it can never be chosen"
            )
            fix = "Declare the unguarded transition last: guards are tried in order"
        else:
            message = (
                f"transition {culprit} is a second transition without a guard for event "
                f"{edge.event!r} in state {edge.source!r} (the first is #{other.index}: {other})"
            )
            fix = "Give one of them a guard, or remove one"
        findings.append(Finding(at, message, fix, culprit))
    return findings


def check_edges(
    edges: Sequence[EdgeSpec], states: Collection[str], final: Collection[str]
) -> list[Finding]:
    """:func:`check_edge` for each transition, in declaration order."""
    findings: list[Finding] = []
    fallbacks: dict[tuple[str, str], EdgeSpec] = {}
    for edge in edges:
        key = (edge.source, edge.event)
        findings += check_edge(edge, states, final, fallbacks.get(key))
        if not edge.guarded:
            fallbacks.setdefault(key, edge)
    return findings


def check_graph(
    states: Sequence[str], initial: str, final: Collection[str], edges: Sequence[EdgeSpec]
) -> list[Finding]:
    """Rules about the whole graph: every state reachable, no dead end that is not final."""
    outgoing: dict[str, list[str]] = {}
    for edge in edges:
        outgoing.setdefault(edge.source, []).append(edge.target)
    reached = {initial}
    todo = [initial]
    while todo:
        for target in outgoing.get(todo.pop(), []):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    findings: list[Finding] = []
    reported: set[str] = set()
    for j, state in enumerate(states):
        if state in reported:
            continue
        reported.add(state)
        if state not in reached:
            findings.append(
                Finding(
                    ("states", j),
                    f"state {state!r} cannot be reached from the initial state {initial!r}",
                    f"Add a transition into {state!r}, or remove it",
                    state,
                )
            )
        elif state not in final and state not in outgoing:
            findings.append(
                Finding(
                    ("states", j),
                    f"state {state!r} has no outgoing transitions but is not final, so an "
                    "instance that enters it is stuck",
                    f"Add a transition out of {state!r}, or mark it final",
                    state,
                )
            )
    return findings


def check_table(
    states: Sequence[str], initial: str | None, final: Sequence[str], edges: Sequence[EdgeSpec]
) -> list[Finding]:
    """Every rule, on a whole definition. Graph rules run only when the parts are sound."""
    findings = check_states(states, initial, final)
    known = set(states)
    final_set = set(final)
    findings += check_edges(edges, known, final_set)
    # Reachability over a broken table would only repeat the problems above in other words.
    if not findings and initial is not None:
        findings.extend(check_graph(states, initial, final_set, edges))
    return findings
