"""Questions a node asks a person (``ctx.interrupt``), and checking the answers.

A question is a JSON object: ``{"question": "Which account?", "schema": {...}}``. The
answer is checked against ``schema``, a JSON Schema restricted to what a form can ask for:
``type`` (``string``, ``number``, ``integer``, ``boolean``, ``array``, ``object``,
``null``, or a list of them), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``minimum``/``maximum``,
``minLength``/``maxLength``, ``minItems``/``maxItems``. Other keywords are refused when
the question is asked, so a schema never silently checks less than it says. No
dependency is needed: the checks are written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentnb._json import check, dumps, json_path
from agentnb.errors import (
    AgentnbError,
    InvalidAnswer,
    InvalidState,
    NoQuestion,
    TaskNotNamed,
)
from agentnb.store.base import DecisionEdit, check_decision
from agentnb.store.records import Decision, Status

if TYPE_CHECKING:
    from agentnb.identity import Identity
    from agentnb.store.base import Checkpointer
    from agentnb.store.policy import PolicyCheck

__all__ = [
    "KEYWORDS",
    "Asked",
    "answer_edit",
    "answer_problems",
    "check_question",
    "open_questions",
    "respond",
    "waiting",
]

KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "title",
        "description",
        "default",
    }
)
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


class Asked(BaseException):
    """Raised by ``ctx.interrupt`` when its question has no answer yet: the run pauses.

    A ``BaseException``, so a node's ``except Exception`` (or a retry policy) cannot
    swallow it.
    """

    def __init__(self, question: dict[str, Any], key: str, index: int) -> None:
        super().__init__(question.get("question"))
        self.question, self.key, self.index = question, key, index


def check_question(question: Any) -> dict[str, Any]:
    """The question as asked, or an error saying what is wrong with it."""
    if not isinstance(question, Mapping):
        question = {"question": question}
    asked: dict[str, Any] = dict(question)
    schema = asked.get("schema", {})
    if not isinstance(schema, Mapping):
        raise AgentnbError(
            f"ctx.interrupt(...): the schema must be a JSON Schema object, not {schema!r}"
        )
    _check_schema(schema, ("schema",))
    return asked


def _check_schema(schema: Mapping[str, Any], path: tuple[str | int, ...]) -> None:
    unknown = sorted(set(schema) - KEYWORDS)
    if unknown:
        raise AgentnbError(
            f"ctx.interrupt(...): {json_path(path)} uses {', '.join(unknown)}, which a question "
            f"cannot check. Use only {', '.join(sorted(KEYWORDS))}"
        )
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in _TYPES:
            raise AgentnbError(
                f"ctx.interrupt(...): {json_path((*path, 'type'))} names {name!r}; "
                f"use one of {', '.join(_TYPES)}"
            )
    for key, sub in dict(schema.get("properties", {})).items():
        _check_schema(sub, (*path, "properties", key))
    if isinstance(schema.get("items"), Mapping):
        _check_schema(schema["items"], (*path, "items"))


def answer_problems(value: Any, schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every way ``value`` breaks ``schema``, as ``(JSON path, what is wrong)``."""
    problems: list[tuple[str, str]] = []
    _validate(value, schema, ("answer",), problems)
    return problems


def _validate(
    value: Any,
    schema: Mapping[str, Any],
    path: tuple[str | int, ...],
    problems: list[tuple[str, str]],
) -> None:
    where = json_path(path)
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES[n](value) for n in names):
            problems.append((where, f"must be {' or '.join(names)}, not {value!r}"))
            return
    if "enum" in schema and value not in schema["enum"]:
        listing = ", ".join(repr(v) for v in schema["enum"])
        problems.append((where, f"must be one of {listing}, not {value!r}"))
    if "const" in schema and value != schema["const"]:
        problems.append((where, f"must be {schema['const']!r}, not {value!r}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append((where, f"must be at least {schema['minimum']}, not {value}"))
        if "maximum" in schema and value > schema["maximum"]:
            problems.append((where, f"must be at most {schema['maximum']}, not {value}"))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append((where, f"must have at least {schema['minLength']} characters"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append((where, f"must have at most {schema['maxLength']} characters"))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append((where, f"must have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append((where, f"must have at most {schema['maxItems']} items"))
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _validate(item, items, (*path, i), problems)
    if isinstance(value, dict):
        properties = dict(schema.get("properties", {}))
        for key in schema.get("required", []):
            if key not in value:
                problems.append((where, f"is missing the required key {key!r}"))
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    problems.append((json_path((*path, key)), "is not a field of this form"))
        for key, sub in properties.items():
            if key in value:
                _validate(value[key], sub, (*path, key), problems)


def waiting(store: Checkpointer, run_id: str) -> dict[str, dict[str, Any]]:
    """What the run's current pause waits for, by task id (the node's name when the pause
    holds no tasks).

    Each value is the pause's ``interrupted`` payload flattened: ``when`` (``"input"`` for
    a question, ``"child"`` for a paused subgraph, ``"before"``/``"after"`` for an
    approval), the question's ``question`` and ``schema``, ``task``, ``digest``, the
    answer's ledger ``key``, the ``child`` run and the ``node``.
    """
    held = [t.task_id for t in store.pending_tasks(run_id) if t.status == "pending"]
    latest = store.interruptions(run_id, held)
    found: dict[str, dict[str, Any]] = {}
    for task in held or [""]:
        paused = latest.get(task)
        if paused is None:
            continue
        p = paused.payload
        name = task or str(paused.node)
        found[name] = {
            **p.get("question", {}),
            "when": p.get("when"),
            "task": name,
            "digest": p.get("digest"),
            "key": p.get("key"),
            "child": p.get("child"),
            "node": paused.node,
        }
    return found


def open_questions(store: Checkpointer, run_id: str) -> list[dict[str, Any]]:
    """The questions a pending run waits on, its paused subgraphs' included (depth first).

    Each is ``{"task", "node", "question", "schema", "digest"}``, plus ``"in"``: the
    subgraph's run id, for a question asked inside one. Empty unless the run is pending.
    """
    if store.get_run(run_id).status != Status.PENDING:
        return []
    found: list[dict[str, Any]] = []
    for task, pause in waiting(store, run_id).items():
        if pause["when"] == "input":
            found.append(
                {
                    "task": task,
                    "node": pause["node"],
                    "question": pause.get("question"),
                    "schema": pause.get("schema", {}),
                    "digest": pause["digest"],
                }
            )
        elif pause["when"] == "child" and pause.get("child"):
            inner = open_questions(store, pause["child"])
            found += [{**q, "task": task, "in": q.get("in", pause["child"])} for q in inner]
    return found


def answer_edit(run_id: str, question: Mapping[str, Any], value: Any) -> DecisionEdit:
    """The answer as a decision's edit, once it fits the question's schema.

    Raises:
        InvalidAnswer: every way ``value`` breaks the schema (or is not JSON).
    """
    problems = answer_problems(value, question.get("schema", {}))
    try:
        check(value, root="answer")
    except InvalidState as exc:
        problems.append(("$.answer", str(exc)))
    if problems:
        raise InvalidAnswer(run_id, problems)
    return DecisionEdit(answer_key=question["key"], answer_json=dumps(value))


def respond(
    store: Checkpointer,
    run_id: str,
    value: Any,
    *,
    by: str,
    comment: str | None = None,
    task: str | None = None,
    expected_digest: str | None = None,
    identity: Identity | None = None,
    checks: Mapping[str, PolicyCheck] | None = None,
) -> Decision:
    """Answer the question a run waits on, with nothing but its store (the CLI's way).

    The same decision as :meth:`Run.respond <agentnb.graph.run.Run.respond>`: checked
    against the schema first, then recorded exactly once by the store's conditional
    update and audited. A question inside a subgraph is answered in the subgraph's run,
    and the pause of each run above it is approved in the same way.

    Raises:
        InvalidAnswer: ``value`` does not fit the schema; the run stays paused.
        TaskNotNamed: several questions wait; name one with ``task``.
        NoQuestion: the run waits for an approval, not an answer.
        ApprovalNotPending: the run waits for nothing (answered already?), audited.
    """
    check_decision("approved", by)
    record = store.get_run(run_id)
    paused = waiting(store, run_id) if record.status == Status.PENDING else {}
    if task is not None:
        paused = {t: q for t, q in paused.items() if t == task}
    elif paused:  # without a task, only what asks something: held approvals are not
        paused = {t: q for t, q in paused.items() if q["when"] in ("input", "child")}
    if not paused and record.status == Status.PENDING:
        raise NoQuestion(run_id, record.node, task)
    if not paused:  # decided already: the store refuses it, and audits the attempt
        return store.decide(
            run_id,
            "approved",
            by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            identity=identity,
            checks=checks,
        )
    if len(paused) > 1:
        raise TaskNotNamed(run_id, list(paused))
    name, question = next(iter(paused.items()))
    held = name if any(t.status == "pending" for t in store.pending_tasks(run_id)) else None
    if question["when"] == "child":
        if store.get_run(question["child"]).status == Status.PENDING:
            respond(
                store,
                question["child"],
                value,
                by=by,
                comment=comment,
                identity=identity,
                checks=checks,
            )
        edit = None
    elif question["when"] == "input":
        edit = answer_edit(run_id, question, value)
    else:
        raise NoQuestion(run_id, str(question["node"]), held)
    digest = expected_digest or question["digest"]
    return store.decide(
        run_id,
        "approved",
        by,
        comment=comment,
        expected_digest=digest,
        task=held,
        edit=edit,
        identity=identity,
        checks=checks,
    )
