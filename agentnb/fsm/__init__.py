"""Event-driven state machines: definitions, running instances, JSON/YAML files, hot reload.

The state is just the node; an instance's data lives in its *context*, a JSON dict kept
beside it. Definitions are built in code (:class:`StateMachine`) or loaded from a file
(:func:`load_machine`, schema in ``machine.schema.json``); both obey the same rules.

Statecharts (:class:`~agentnb.Statechart` with :class:`~agentnb.State`,
:class:`~agentnb.Parallel`, :class:`~agentnb.Final`, :class:`~agentnb.History`; or
:func:`~agentnb.load_scxml`, :func:`~agentnb.load_statechart`, :func:`~agentnb.load_xstate`)
run with the W3C SCXML semantics. A flat machine is a statechart without nesting: it compiles
onto the same interpreter (``agentnb.fsm.flat``), and every instance is one class,
:class:`MachineInstance` (``ChartInstance`` is the same class), kept in one store format,
with delayed events as durable timers in the store.

Optional dependencies (``pip install "agentnb[config]"``): ``jsonschema`` to load files,
``pyyaml`` for YAML, ``watchfiles`` for :class:`MachineReloader`. They are imported only when
used, so ``import agentnb.fsm`` needs none of them.
"""

from agentnb.fsm.chart import Final, History, Parallel, State, Statechart
from agentnb.fsm.chart_file import load_statechart, load_xstate
from agentnb.fsm.content import Assign, Cancel, Foreach, If, Log, Raise, Send
from agentnb.fsm.instance import ChartInstance, MachineInstance, MachineStore
from agentnb.fsm.interpreter import Microstep
from agentnb.fsm.loader import load_machine, validate_file
from agentnb.fsm.machine import StateMachine, Transition
from agentnb.fsm.memory import MemoryMachineStore
from agentnb.fsm.records import InstanceSnapshot, TimerRecord, TransitionRecord
from agentnb.fsm.reload import MachineReloader, ReloadResult
from agentnb.fsm.scxml import load_scxml
from agentnb.fsm.timers import ManualClock

__all__ = [
    "Assign",
    "Cancel",
    "ChartInstance",
    "Final",
    "Foreach",
    "History",
    "If",
    "InstanceSnapshot",
    "Log",
    "MachineInstance",
    "MachineReloader",
    "MachineStore",
    "ManualClock",
    "MemoryMachineStore",
    "Microstep",
    "Parallel",
    "Raise",
    "ReloadResult",
    "Send",
    "State",
    "StateMachine",
    "Statechart",
    "TimerRecord",
    "Transition",
    "TransitionRecord",
    "load_machine",
    "load_scxml",
    "load_statechart",
    "load_xstate",
    "validate_file",
]
