"""A flat :class:`~agentnb.fsm.machine.StateMachine` as the statechart it is.

A flat machine is a statechart without nesting, so one interpreter
(:mod:`agentnb.fsm.interpreter`) runs both. :func:`compile_machine` writes the statechart:

* each state is a top-level state, each final state a top-level final state (entering one
  ends the instance, as a flat final state accepts no events);
* each declared transition is a transition of its source, in declaration order, with the
  event name matched exactly (no SCXML prefix matching: ``timer`` does not take
  ``timer.fast``), the guard as its condition and the action as its content — under the
  transition's timeout, retry policy and breaker when it has any (:class:`Resilient`);
* on-enter and on-exit hooks are the states' entry and exit content, so a transition runs
  the source's exit hooks, then the action, then the target's enter hooks (a
  self-transition exits and re-enters its state, as an SCXML external transition does);
* a transition's ``order`` is its declaration ``index``, which is what a record names.

Example:
    >>> from agentnb.fsm.machine import StateMachine
    >>> door = StateMachine("door", ["closed", "open"], initial="closed")
    >>> _ = door.add_transition("closed", "push", "open")
    >>> chart = compile_machine(door.freeze())
    >>> [(t.source.id, t.events, t.targets) for t in chart.transitions()]
    [('closed', ('push',), ('open',))]
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentnb._aio import settle
from agentnb.fsm.chart import Statechart
from agentnb.fsm.content import Call, Runtime
from agentnb.fsm.nodes import ROOT, ChartTransition, Condition, Node
from agentnb.resilience import guarded_call

if TYPE_CHECKING:
    from agentnb.fsm.machine import StateMachine, Transition

__all__ = ["Resilient", "compile_machine"]


@dataclass(frozen=True, slots=True)
class Resilient:
    """A flat transition's action under its ``timeout``, ``retry`` and ``breaker``.

    The policy is async (:func:`~agentnb.resilience.guarded_call`), so a machine with one
    runs its events through ``asend``'s loop; a failed action saves nothing.
    """

    transition: Transition
    awaits: ClassVar[bool] = True

    @property
    def label(self) -> str:
        """The action's name, as the microstep view shows it."""
        return str(getattr(self.transition.action, "__name__", None) or self.transition.action)

    def run(self, rt: Runtime) -> None:
        t = self.transition
        assert t.action is not None
        action = t.action
        owner = str(getattr(rt, "sessionid", ""))

        def attempt(context: dict[str, Any], payload: Any) -> Any:
            return settle(
                guarded_call(
                    action,
                    lambda: (copy.deepcopy(context), payload),
                    timeout=t.timeout,
                    retry=t.retry,
                    breaker=t.breaker,
                    is_async=inspect.iscoroutinefunction(action),
                    owner=owner,
                    name=self.label,
                    report=lambda type, data: None,
                    what="action",
                )
            )

        attempt.__name__ = self.label
        Call(attempt).run(rt)


def compile_machine(machine: StateMachine) -> Statechart:
    """The statechart ``machine`` runs as (see the module docstring); it shares the
    machine's listeners, so ``machine.subscribe`` hears every instance's transitions."""
    root = Node(ROOT, "scxml")
    for name in machine.states:
        final = name in machine.final
        node = Node(name, "final" if final else "state", root)
        if enter := machine.enter_hooks(name):
            node.onentry.append(tuple(Call(h) for h in enter))
        if (leave := machine.exit_hooks(name)) and not final:
            node.onexit.append(tuple(Call(h) for h in leave))
        root.children.append(node)
    states = {node.id: node for node in root.children}
    declared: list[tuple[ChartTransition, int]] = []
    for t in machine.transitions:
        source = states[t.source]
        compiled = ChartTransition(
            source,
            (t.event,),
            (t.target,),
            cond=None if t.guard is None else Condition(t.guard),
            content=_action(t),
            exact=True,
        )
        source.transitions.append(compiled)
        declared.append((compiled, t.index))
    root.initial = ChartTransition(root, (), (machine.initial,))
    chart = Statechart(machine.name, root=root, description=machine.description)
    for compiled, index in declared:
        compiled.order = index
    chart.listeners = machine.listeners
    return chart


def _action(t: Transition) -> tuple[Any, ...]:
    if t.action is None:
        return ()
    if t.timeout is None and t.retry is None and t.breaker is None:
        return (Call(t.action),)
    return (Resilient(t),)
