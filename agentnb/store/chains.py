"""Checkpoint rows as chains — snapshots, skips and deltas — written and read the same way
by every backend.

The format is described in :mod:`agentnb.store.history`; the codec is
:mod:`agentnb.store.deltas`. A backend stores and returns rows
``(run_id, step, seq, node, at, kind, body)``; ``kind`` is one of

* :data:`SNAPSHOT` (or ``None``, a row written before the format had kinds) — the whole
  state;
* :data:`DELTA` — what changed from the run's checkpoint at ``step - 1`` (its latest row,
  when a decision's edit saved that step again);
* :data:`SKIP` — what changed from the run's previous **anchor**: the latest snapshot or
  skip row at a step before this one. One skip stands for the deltas it jumps over.

Snapshots and skips are the anchors. The writer cuts the chain with an anchor every
``every`` deltas (or ``max_bytes`` of them, :class:`~agentnb.store.deltas.SnapshotPolicy`),
so loading step ``k`` reads fewer than ``every`` deltas back to an anchor, then the anchors
back to a snapshot: for the issue #13 loop (one message appended per step), about
``2 * sqrt(k)`` rows, each appended item read once, where a delta-only chain reads ``k``
rows. A skip, not a snapshot, is what a growing state needs: it holds only what the steps
since the last anchor added, so the file stays linear in what changed (every appended item
is stored twice: in its step's delta and in one skip) where a snapshot every ``every``
steps would make it quadratic in the run's length. An anchor is a snapshot instead when
the skips since the last one would mostly carry values replaced since (a key rewritten
every step: reading them is waste), or when there are ``every`` skips weighing as much as
the snapshot (so snapshots of a growing state grow geometrically and the skips read to
load a step stay fewer than ``every``).

What a backend calls:

* :func:`row` — the ``(kind, body)`` to store for a :class:`~agentnb.store.base.CheckpointWrite`;
* :func:`links` — which rows make up a step back to its anchor, from ``(step, key, kind)``
  read newest first without the bodies (an index scan);
* :func:`anchors` — the anchors from there back to a snapshot, from the anchor rows alone
  (an index of their own: SQLite's and PostgreSQL's ``entries_anchors``);
* :func:`rebuild` — the state of a step from those rows' bodies, newest first;
* :func:`rebuild_all` — every step's state from a run's rows, oldest first.

A step may have several rows (a decision's edit saves it again, as a snapshot): the
latest one counts, and these functions skip the others, so a backend may hand them every
row it has. Only the latest step of a run is ever saved again, so an anchor's step has no
later delta row.

The writer (the driver, which holds the run's live state while it holds the lease) decides
the kind with :class:`Chain`: it keeps the deltas since the last anchor and the weight of
the skips since the last snapshot, so a backend never reads old rows to write a new one. A
run's first checkpoint is always a snapshot, and so is an edited state and the first
checkpoint a process writes after loading a state from the store, so no chain crosses
runs, edits or writers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from agentnb._json import dumps, loads
from agentnb.errors import StoreError
from agentnb.store.deltas import SnapshotPolicy, diff, diff_at, merge

if TYPE_CHECKING:
    from agentnb.store.base import CheckpointWrite

__all__ = [
    "DEFAULT_POLICY",
    "DELTA",
    "SKIP",
    "SNAPSHOT",
    "Chain",
    "anchors",
    "apply_owned",
    "is_anchor",
    "is_snapshot",
    "links",
    "rebuild",
    "rebuild_all",
    "row",
]

K = TypeVar("K")

SNAPSHOT = "snapshot"
"""A row whose body is the whole state (JSON)."""
DELTA = "delta"
"""A row whose body is a delta (:func:`agentnb.store.deltas.diff`, JSON) from the step before."""
SKIP = "skip"
"""A row whose body is a delta from the run's previous anchor (snapshot or skip)."""

DEFAULT_POLICY = SnapshotPolicy()
"""An anchor every 100 steps (or 256 KiB of deltas); a skip unless a snapshot is due."""


def is_snapshot(kind: str | None) -> bool:
    """True for a snapshot row (``None``: a row written before the format had kinds)."""
    return kind is None or kind == SNAPSHOT


def is_anchor(kind: str | None) -> bool:
    """True for a snapshot or a skip: a row a chain is cut at."""
    return kind != DELTA


def row(write: CheckpointWrite) -> tuple[str, str]:
    """The ``(kind, body)`` a backend stores for ``write``."""
    if write.delta_json is not None:
        return write.delta_kind, write.delta_json
    return SNAPSHOT, write.state_json


_Since = tuple[dict[str, Any], "_Since | None"]
"""The deltas since the last anchor, newest first: ``(delta, the link before)``, a linked
list of plain pairs (O(1) per step, built at C speed; a chain that was not stored is
dropped with nothing to undo)."""


@dataclass(slots=True)  # not frozen: built on every step (see agentnb.store.records)
class Chain:
    """Where a run's stored chain stands: the deltas since its last anchor (how many,
    their JSON bytes), the skips since its last snapshot (how many, the bytes they append
    and set) and that snapshot's bytes (``base``).

    The writer keeps one per run it drives, beside the live state; ``None`` where it is
    not known (a state just loaded from the store) makes the next checkpoint a snapshot.
    """

    steps: int = 0
    size: int = 0
    base: int = 0
    policy: SnapshotPolicy | None = None
    """``None``: :data:`DEFAULT_POLICY`, read when the chain grows."""
    skips: int = 0
    kept: int = 0
    replaced: int = 0
    last: str = SNAPSHOT
    """The kind of the row the chain ends with: what the writer stores for the delta text
    :meth:`next` returned (:attr:`~agentnb.store.base.CheckpointWrite.delta_kind`)."""
    since: _Since | None = field(default=None, compare=False, repr=False)

    @classmethod
    def after(cls, snapshot_json: str, policy: SnapshotPolicy | None = None) -> Chain:
        """The chain that starts with a snapshot just stored as ``snapshot_json``."""
        return cls(0, 0, len(snapshot_json), policy)

    def next(
        self,
        previous: Mapping[str, Any],
        state: Mapping[str, Any],
        appended: Mapping[str, Sequence[Any]] | None = None,
        *,
        changed: Collection[str] | None = None,
        text: str | None = None,
    ) -> tuple[str | None, Chain]:
        """The body (JSON) of the row that turns ``previous`` into ``state`` and the chain
        after it — a delta, or a skip when the new chain's :attr:`last` says so; or
        ``None`` when this step is to be a snapshot: the writer stores the whole state and
        continues with :meth:`after` of it. ``appended``: see
        :func:`~agentnb.store.deltas.diff`.

        A writer that knows which keys the step ``changed`` (``state`` is ``previous``
        with a delta of those keys merged: :func:`~agentnb.store.deltas.diff_at`) has
        only them compared; ``text``, the JSON of ``{key: state[key] for key in
        changed}`` when it has it, is then the body's ``"set"`` as it is when every one
        of them changed (the delta is not encoded again)."""
        if changed is None:
            delta = diff(previous, state, appended)
            if delta is None:
                return None, Chain(policy=self.policy)
            return self.push(delta)
        delta = diff_at(previous, state, changed, appended)
        if text is not None and len(delta) == 1 and len(delta.get("set", ())) == len(changed):
            return self.push(delta, '{"set":' + text + "}")
        return self.push(delta)

    def push(self, delta: dict[str, Any], text: str | None = None) -> tuple[str | None, Chain]:
        """As :meth:`next`, for the delta itself (``text``: its JSON, when known). The
        chain holds on to ``delta`` until the next anchor: it must not change."""
        text = dumps(delta) if text is None else text
        policy = self.policy or DEFAULT_POLICY
        steps, size = self.steps + 1, self.size + len(text)
        since: _Since = (delta, self.since)
        if not policy.anchor_due(steps, size):
            return text, Chain(
                steps, size, self.base, self.policy, self.skips, self.kept, self.replaced,
                DELTA, since,
            )  # fmt: skip
        found: list[dict[str, Any]] = []
        link: _Since | None = since
        while link is not None:
            older, link = link
            found.append(older)
        skip = merge(reversed(found))
        added = dumps(skip["append"]) if "append" in skip else ""
        replaced = dumps(skip["set"]) if "set" in skip else ""
        skips, kept = self.skips + 1, self.kept + len(added)
        replaced_since = self.replaced + len(replaced)
        if policy.snapshot_due(skips, kept, replaced_since, self.base):
            return None, Chain(policy=self.policy)
        parts = ([f'"append":{added}'] if added else []) + (
            [f'"set":{replaced}'] if replaced else []
        )
        body = "{" + ",".join(parts) + "}"
        return body, Chain(0, 0, self.base, self.policy, skips, kept, replaced_since, SKIP)


class Link(NamedTuple):
    """One row of a chain: its step, what finds its body again (``key``), its kind."""

    step: int
    key: Any
    kind: str | None


def links(newest_first: Iterable[tuple[int, K, str | None]], step: int | None = None) -> list[Link]:
    """The rows that make up ``step`` (default: the first one given) back to its anchor,
    from one run's ``(step, key, kind)`` rows ordered by step then write order, newest
    first: the latest row of each step, down to (and including) the first snapshot or
    skip. Empty when there is no row for ``step``. ``key`` is whatever finds the row's
    body again (SQLite: the entry's ``seq``). Stops reading at the anchor: pass a cursor.
    """
    found: list[Link] = []
    for at, key, kind in newest_first:
        if found and found[-1].step == at:
            continue  # an earlier row of a step saved again (a decision's edit)
        if not found and step is not None and at != step:
            return []
        found.append(Link(at, key, kind))
        if is_anchor(kind):
            break
    return found


def anchors(newest_first: Iterable[tuple[int, K, str | None]]) -> list[Link]:
    """From one run's anchor rows (snapshots and skips, ``(step, key, kind)`` newest
    first, the first one being the anchor a chain ends at): the latest row of each step,
    down to (and including) a snapshot. Stops reading there: pass a cursor."""
    found: list[Link] = []
    for at, key, kind in newest_first:
        if found and found[-1].step == at:
            continue
        found.append(Link(at, key, kind))
        if is_snapshot(kind):
            break
    return found


def rebuild(newest_first: Iterable[tuple[int, str | None, str]]) -> dict[str, Any]:
    """The state of the first row of ``newest_first``: ``(step, kind, body)`` rows of one
    run from that step back to (and including) a snapshot. An earlier row of a step
    already taken is skipped, and so is a delta a skip jumps over: a backend may pass the
    chain alone (what :func:`links` and :func:`anchors` found) or every row it has.

    Raises:
        StoreError: the rows end before a snapshot, or a step is missing between them.
    """
    chain: list[str] = []
    taken: int | None = None
    jumping = False  # the row taken last was a skip: the next one needed is an anchor
    for step, kind, body in newest_first:
        if step == taken:
            continue  # an earlier row of the step just taken
        if jumping:
            if not is_anchor(kind):
                continue  # a step the skip jumps over
        elif taken is not None and step != taken - 1:
            raise StoreError(
                f"the checkpoint chain has no step {taken - 1} (found {step}); "
                "the file is damaged: restore it from a backup"
            )
        chain.append(body)
        if is_snapshot(kind):
            return _replay(chain[-1], reversed(chain[:-1]))
        taken, jumping = step, kind == SKIP
    raise StoreError(
        "a checkpoint delta has no snapshot before it; the file is damaged: "
        "restore it from a backup"
    )


def rebuild_all(
    oldest_first: Sequence[tuple[int, str | None, str]],
) -> list[dict[str, Any]]:
    """Every step's state, from one run's ``(step, kind, body)`` rows in write order (of a
    step saved twice, the latest row counts), oldest step first.

    Each state is a copy of its own (as if each step were loaded alone): changing one
    changes no other.
    """
    latest = {step: (kind, body) for step, kind, body in oldest_first}
    states: list[dict[str, Any]] = []
    state: dict[str, Any] | None = None
    anchor: str | None = None  # the JSON of the last anchor's state, what a skip applies to
    last = -1
    for step, (kind, body) in sorted(latest.items()):
        if is_snapshot(kind):
            state = loads(body)
        elif kind == SKIP and anchor is not None:
            state = apply_owned(loads(anchor), loads(body))
        elif state is None or kind == SKIP or step != last + 1:
            raise StoreError(
                f"the checkpoint {kind} of step {step} has no state before it; the file is "
                "damaged: restore it from a backup"
            )
        else:
            state = apply_owned(state, loads(body))
        last = step
        text = dumps(state)
        if is_anchor(kind):
            anchor = text
        states.append(loads(text))
    return states


def _replay(snapshot: str, steps: Iterable[str]) -> dict[str, Any]:
    state: dict[str, Any] = loads(snapshot)
    # One decode of all the skips and deltas (a JSON array of them), not one call per row.
    for delta in loads("[" + ",".join(steps) + "]"):
        state = apply_owned(state, delta)
    return state


def apply_owned(state: dict[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`agentnb.store.deltas.apply` in place, on a state nobody else holds (decoded
    for this rebuild), with a delta nothing else holds either (its values become the
    state's): appending extends the list instead of copying it each step."""
    for key, tail in delta.get("append", {}).items():
        state[key].extend(tail)
    state.update(delta.get("set", {}))
    return state
