"""Who may decide an interrupt: the approver policy, as declared and as stored with a run.

A policy is declared on the interrupt (``add_interrupt_before("refund", approvers=...,
separate_duties=...)``) and lives in the workflow's code. So that a process *without* that
code — the ``agentnb`` CLI, a notebook that only opened the database — is bound by it too,
every run stores, when it starts, what its decisions will be checked against:

* a collection of approvers is stored as data (names, and ``"group:NAME"`` entries), so any
  process can check it;
* ``separate_duties`` is stored as a flag, beside the identity that started the run;
* a callable ``policy(identity, run) -> bool`` cannot be stored, so only its name is: a
  process that has not loaded it refuses to decide such a run
  (:class:`~agentnb.errors.PolicyUnavailable`) rather than skip the check.

Storing the policy with the run (instead of asking each process for its current code)
means every process agrees on who may decide a given run, and editing the workflow does not
change the rules for runs already waiting. The check runs inside the store's decision
transaction, so it cannot be raced: a refused attempt is audited with its reason and
changes nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentnb.errors import DefinitionError
from agentnb.identity import GROUP_PREFIX, Identity

__all__ = [
    "ApproverPolicy",
    "PendingRun",
    "PolicyCheck",
    "Refusal",
    "RunPolicy",
    "declare",
    "refusal",
]


@dataclass(frozen=True, slots=True)
class PendingRun:
    """What a callable policy is asked about: the paused run, and the decision proposed.

    Example:
        A callable policy gets the deciding identity and a ``PendingRun``:

        >>> from agentnb import Identity
        >>> from agentnb.store import PendingRun
        >>> def finance_over_500(identity, run):
        ...     return run.state["amount"] <= 500 or identity.matches("group:finance")
        >>> run = PendingRun("r1", "refund", "pay", 1, {"amount": 800}, None, "approved", "bob")
        >>> finance_over_500(Identity("bob"), run)
        False
        >>> finance_over_500(Identity("ada", groups=["finance"]), run)
        True
    """

    run_id: str
    graph: str
    node: str
    step: int
    state: dict[str, Any]
    started_by: Identity | None
    decision: str
    """``"approved"`` or ``"rejected"``."""
    by: str
    """The name given with the decision (free text; check ``identity``, not this)."""


PolicyCheck = Callable[[Identity, PendingRun], bool]
"""A callable approver policy: ``policy(identity, run) -> bool`` (True allows)."""


@dataclass(frozen=True, slots=True)
class ApproverPolicy:
    """The policy of one interrupt, in the form stored with each run.

    Attributes:
        approvers: who may decide: names and ``"group:NAME"`` entries (``None``: anyone).
        check: the qualified name of a callable policy (``None`` when there is none).
        separate_duties: refuse the identity that started the run.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = StateGraph("refund").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> graph.add_interrupt_before("pay", approvers={"group:finance"}, separate_duties=True)
        StateGraph('refund', nodes=['pay'])
        >>> run = graph.compile().start({})
        >>> policy = run.policy.interrupts["before:pay"]
        >>> sorted(policy.approvers), policy.separate_duties
        (['group:finance'], True)
    """

    approvers: frozenset[str] | None = None
    check: str | None = None
    separate_duties: bool = False

    def describe(self) -> str:
        parts = []
        if self.approvers is not None:
            parts.append("approvers " + ", ".join(sorted(self.approvers)))
        if self.check is not None:
            parts.append(f"policy {self.check}")
        if self.separate_duties:
            parts.append("separate duties")
        return "; ".join(parts) or "anyone"

    def to_json(self) -> dict[str, Any]:
        return {
            "approvers": None if self.approvers is None else sorted(self.approvers),
            "check": self.check,
            "separate_duties": self.separate_duties,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApproverPolicy:
        approvers = data.get("approvers")
        return cls(
            None if approvers is None else frozenset(approvers),
            data.get("check"),
            bool(data.get("separate_duties")),
        )


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """What a run's decisions are checked against, stored when the run started.

    Attributes:
        started_by: the identity that started the run (``None`` for runs from before 0.2).
        interrupts: the policy of each interrupt, keyed ``"before:NODE"`` / ``"after:NODE"``.

    Example:
        >>> from agentnb import Identity, MemoryCheckpointer, StateGraph
        >>> graph = StateGraph("refund").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> graph.add_interrupt_before("pay", approvers={"ada"})
        StateGraph('refund', nodes=['pay'])
        >>> store = MemoryCheckpointer(identity=lambda: Identity("bob"))
        >>> policy = graph.compile(store).start({}).policy
        >>> policy.started_by.name, list(policy.interrupts)
        ('bob', ['before:pay'])
    """

    started_by: Identity | None = None
    interrupts: Mapping[str, ApproverPolicy] = field(default_factory=dict)

    def applying(self, node: str, after: str | None) -> dict[str, ApproverPolicy]:
        """The policies a decision at this pause is bound by.

        A pause before ``node`` is governed by ``node``'s interrupt-before policy; a pause
        after ``after`` also by that node's interrupt-after policy — both, when one
        decision covers both boundaries.
        """
        keys = [f"before:{node}"] + ([f"after:{after}"] if after else [])
        return {k: self.interrupts[k] for k in keys if k in self.interrupts}


def declare(
    approvers: object, separate_duties: object, where: str
) -> tuple[ApproverPolicy | None, PolicyCheck | None]:
    """Check an interrupt's ``approvers=`` / ``separate_duties=`` and make its policy.

    Returns the stored form (``None`` when the interrupt has no policy) and the callable,
    if the policy is one.
    """
    if not isinstance(separate_duties, bool):
        raise DefinitionError(
            f"{where}: separate_duties={separate_duties!r} must be True or False",
            culprit=where,
            fix="Pass separate_duties=True to refuse the identity that started the run.",
        )
    if approvers is None:
        return (ApproverPolicy(separate_duties=True), None) if separate_duties else (None, None)
    if callable(approvers) and not isinstance(approvers, Collection):
        if inspect.iscoroutinefunction(approvers) or inspect.iscoroutinefunction(
            getattr(approvers, "__call__", None)  # noqa: B004 - instances with an async __call__
        ):
            raise DefinitionError(
                f"{where}: the policy {approvers!r} is async",
                culprit=where,
                fix="Make it a plain function policy(identity, run) -> bool: it runs inside "
                "the decision's transaction, which must not wait on anything.",
            )
        name = f"{getattr(approvers, '__module__', '?')}.{getattr(approvers, '__qualname__', '?')}"
        return ApproverPolicy(None, name, separate_duties), approvers
    fix = (
        'Pass a collection of names and groups, e.g. approvers={"ada", "group:finance"}, '
        "or a function policy(identity, run) -> bool."
    )
    if isinstance(approvers, str | bytes) or not isinstance(approvers, Collection):
        raise DefinitionError(
            f"{where}: approvers={approvers!r} is neither a collection of names nor a callable",
            culprit=where,
            fix=fix,
        )
    entries = list(approvers)
    bad = [e for e in entries if not isinstance(e, str) or not e.strip() or e == GROUP_PREFIX]
    if bad:
        raise DefinitionError(
            f"{where}: approver {bad[0]!r} is not a name or 'group:NAME'", culprit=where, fix=fix
        )
    if not entries:
        raise DefinitionError(
            f"{where}: approvers is empty, so nobody could ever decide the run",
            culprit=where,
            fix="Name at least one approver, or leave approvers out to let anyone decide.",
        )
    return ApproverPolicy(frozenset(entries), None, separate_duties), None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a policy refused: the audit's reason, and the callable it could not check."""

    reason: str
    unavailable: str | None = None


def refusal(
    policies: Mapping[str, ApproverPolicy],
    identity: Identity,
    started_by: Identity | None,
    checks: Mapping[str, PolicyCheck],
    pending: Callable[[], PendingRun],
) -> Refusal | None:
    """Check ``identity`` against every applying policy; ``None`` when all allow it.

    Fails closed: a callable that raises, or returns anything but a bool, refuses.
    """
    for key, policy in policies.items():
        if policy.separate_duties and started_by is not None and started_by.name == identity.name:
            return Refusal(f"separate duties: {identity.name} started the run ({key})")
        if policy.approvers is not None and not any(identity.matches(e) for e in policy.approvers):
            allowed = ", ".join(sorted(policy.approvers))
            return Refusal(f"{identity.name} is not among the approvers of {key} ({allowed})")
        if policy.check is None:
            continue
        check = checks.get(key)
        if check is None:
            return Refusal(
                f"policy {policy.check} of {key} is code this process has not loaded",
                unavailable=policy.check,
            )
        try:
            allowed_by_check: object = check(identity, pending())
        except Exception as exc:
            return Refusal(f"policy {policy.check} raised {type(exc).__name__}: {exc}")
        if allowed_by_check is not True:
            if allowed_by_check is False:
                return Refusal(f"policy {policy.check} refused {identity.name} ({key})")
            return Refusal(
                f"policy {policy.check} returned {allowed_by_check!r}, not True or False"
            )
    return None
