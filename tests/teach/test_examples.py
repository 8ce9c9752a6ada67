"""The course's one story: the refund workflow and the refund machine walk the same path."""

from __future__ import annotations

import pytest

from agentnb.examples import (
    ScriptedModel,
    build_refund_machine,
    build_refund_workflow,
    tool_call,
)

# run.node after each step of the workflow -> the machine event that moves the same way
EVENTS = {"human_approval": "planned", "refund": "planned", "END": "paid"}


def _workflow_path(amount: int, decision: str | None) -> list[str]:
    run = build_refund_workflow().start({"requested": amount})
    path = [run.node]
    while not run.status.finished:
        if run.status == "pending":
            if decision == "rejected":
                run.reject(by="t")
                path.append("rejected")
                break
            run.approve(by="t")
        run.step()
        path.append(run.node)
    return ["done" if n == "END" else n for n in path]


def _machine_path(amount: int, decision: str | None) -> list[str]:
    instance = build_refund_machine().start()
    path = [instance.state]
    instance.send("planned", {"amount": amount})
    path.append(instance.state)
    if instance.state == "human_approval":
        instance.send(decision or "approved")
        path.append(instance.state)
    if instance.state == "refund":
        instance.send("paid", {"receipt": "re_1"})
        path.append(instance.state)
    return path


@pytest.mark.parametrize(
    ("amount", "decision"), [(120, None), (800, "approved"), (800, "rejected")]
)
def test_the_refund_machine_walks_the_workflows_path(amount: int, decision: str | None) -> None:
    assert _machine_path(amount, decision) == _workflow_path(amount, decision)


def test_the_refund_machine_keeps_the_workflow_data_in_its_context() -> None:
    instance = build_refund_machine().start()
    instance.send("planned", {"amount": 120})
    instance.send("paid", {"receipt": "re_1"})
    assert instance.is_final
    assert instance.context == {"amount": 120, "status": "success", "receipt": "re_1"}


def test_a_scripted_model_answers_by_the_number_of_assistant_turns() -> None:
    model = ScriptedModel([tool_call("lookup_order", "c1", order_id="A7")])
    first = model([{"role": "user", "content": "hi"}])
    assert first["tool_calls"] == [{"id": "c1", "name": "lookup_order", "args": {"order_id": "A7"}}]
    again = model([{"role": "user", "content": "hi"}])  # the same conversation, the same answer
    assert again == first
    later = model([{"role": "user"}, first, {"role": "tool", "content": "ok"}])
    assert later == {"role": "assistant", "content": "I have nothing more to add."}
    assert model.calls == 3


def test_a_scripted_model_can_loop_forever() -> None:
    loop = tool_call("lookup_order", "again", order_id="A7")
    model = ScriptedModel([], then=loop)
    conversation: list[dict[str, object]] = []
    for _ in range(5):
        answer = model(conversation)
        assert answer == loop
        conversation.append(answer)
    answer["tool_calls"][0]["args"]["order_id"] = "changed"  # callers get copies
    assert model(conversation) == loop
