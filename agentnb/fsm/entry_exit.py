"""The exit and entry sets of a microstep: the standard's set computations, as pure functions.

They read the configuration and the history values and change nothing: ``compute_exit_set``
says which states a set of transitions leaves, ``compute_entry_set`` which states it enters
(with the compound states entered by default and the history defaults' content), through
the transition domain and the least common compound ancestor (LCCA), as in the W3C
"Algorithm for SCXML Interpretation".
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agentnb.fsm.content import Content
from agentnb.fsm.nodes import ChartTransition, Node

__all__ = [
    "EntrySet",
    "compute_entry_set",
    "compute_exit_set",
    "document_order",
    "find_lcca",
    "get_effective_target_states",
    "get_transition_domain",
    "is_in_final_state",
    "proper_ancestors",
]

History = Mapping[str, Sequence[Node]]


def document_order(node: Node) -> int:
    """Sort key: a state's position in the document."""
    return node.order


def proper_ancestors(state: Node, stop: Node | None) -> list[Node]:
    """The ancestors of ``state`` from its parent up to (not including) ``stop``."""
    found: list[Node] = []
    node = state.parent
    while node is not None and node is not stop:
        found.append(node)
        node = node.parent
    return found


def find_lcca(states: Sequence[Node]) -> Node:
    """The least common compound ancestor (the root when nothing smaller contains them all)."""
    head, tail = states[0], states[1:]
    for anc in proper_ancestors(head, None):
        if (anc.is_compound or anc.kind == "scxml") and all(s.is_descendant_of(anc) for s in tail):
            return anc
    raise AssertionError(f"no common ancestor for {states}")  # pragma: no cover


def get_effective_target_states(t: ChartTransition, history: History) -> list[Node]:
    """The transition's targets, with each history state replaced by what it stands for."""
    targets: list[Node] = []
    for s in t.target_nodes:
        if s.kind == "history":
            remembered = history.get(s.id)
            if remembered:
                found: Sequence[Node] = remembered
            else:
                assert s.initial is not None
                found = get_effective_target_states(s.initial, history)
            targets.extend(x for x in found if x not in targets)
        elif s not in targets:
            targets.append(s)
    return targets


def get_transition_domain(t: ChartTransition, history: History) -> Node | None:
    """The state whose descendants the transition exits and enters (None if targetless)."""
    targets = get_effective_target_states(t, history)
    if not targets:
        return None
    if t.source.kind == "scxml":
        return t.source
    if t.internal and t.source.is_compound and all(s.is_descendant_of(t.source) for s in targets):
        return t.source
    return find_lcca([t.source, *targets])


def compute_exit_set(
    configuration: Collection[Node], transitions: Iterable[ChartTransition], history: History
) -> set[Node]:
    """The active states the transitions leave."""
    leaving: set[Node] = set()
    for t in transitions:
        if t.target_nodes:
            domain = get_transition_domain(t, history)
            if domain is not None:
                leaving.update(s for s in configuration if s.is_descendant_of(domain))
    return leaving


def is_in_final_state(state: Node, configuration: Collection[Node]) -> bool:
    """A compound state with an active final child, or a parallel one whose regions all are."""
    if state.is_compound:
        return any(c.kind == "final" and c in configuration for c in state.child_states)
    if state.kind == "parallel":
        return all(is_in_final_state(c, configuration) for c in state.child_states)
    return False


@dataclass
class EntrySet:
    """What a microstep enters: the states, those entered by default, history content."""

    history: History
    entering: set[Node] = field(default_factory=set)
    default_entry: set[Node] = field(default_factory=set)
    history_content: dict[str, tuple[Content, ...]] = field(default_factory=dict)

    def add_descendants(self, state: Node) -> None:
        """``addDescendantStatesToEnter``."""
        if state.kind == "history":
            parent = state.parent
            assert parent is not None
            remembered = self.history.get(state.id)
            if remembered:
                targets: Sequence[Node] = remembered
            else:
                assert state.initial is not None
                self.history_content[parent.id] = state.initial.content
                targets = state.initial.target_nodes
            for s in targets:
                self.add_descendants(s)
            for s in targets:
                self.add_ancestors(s, parent)
            return
        self.entering.add(state)
        if state.is_compound:
            self.default_entry.add(state)
            assert state.initial is not None
            for s in state.initial.target_nodes:
                self.add_descendants(s)
            for s in state.initial.target_nodes:
                self.add_ancestors(s, state)
        elif state.kind == "parallel":
            self._add_regions(state)

    def add_ancestors(self, state: Node, ancestor: Node | None) -> None:
        """``addAncestorStatesToEnter``."""
        for anc in proper_ancestors(state, ancestor):
            if anc.kind == "scxml":
                continue
            self.entering.add(anc)
            if anc.kind == "parallel":
                self._add_regions(anc)

    def _add_regions(self, parallel: Node) -> None:
        for child in parallel.child_states:
            if not any(s is child or s.is_descendant_of(child) for s in self.entering):
                self.add_descendants(child)


def compute_entry_set(transitions: Iterable[ChartTransition], history: History) -> EntrySet:
    """The states the transitions enter (``computeEntrySet``)."""
    found = EntrySet(history)
    for t in transitions:
        for s in t.target_nodes:
            found.add_descendants(s)
        ancestor = get_transition_domain(t, history)
        for s in get_effective_target_states(t, history):
            found.add_ancestors(s, ancestor)
    return found
