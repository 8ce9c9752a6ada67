"""A scripted stand-in for a language model, so the agent loop runs offline, with no key.

A chat model reads the conversation and answers with text or with *tool calls*. This one
answers from a script: its n-th answer is ``script[n]``, where n counts the assistant
messages already in the conversation — a pure function of the messages, so a step re-run
after a crash gets the same answer, as a real model called with the same seed might not.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["ScriptedModel", "tool_call"]


def tool_call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    """An assistant message asking for one tool call, in the common chat-API shape.

    Example:
        >>> from agentnb.examples import tool_call
        >>> tool_call("search", "call-1", query="refund policy")
        {'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'call-1', 'name': 'search',
        'args': {'query': 'refund policy'}}]}
    """
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "name": name, "args": args}],
    }


class ScriptedModel:
    """Answers a conversation from a script of assistant messages.

    Args:
        script: the assistant messages to answer with, in order (``tool_call(...)`` for a
            tool call, ``{"role": "assistant", "content": "..."}`` for text).
        then: what to answer once the script is used up; by default a closing text. Pass
            a tool call to make a model that never stops asking (a runaway loop).

    Example:
        >>> model = ScriptedModel([tool_call("lookup_order", "c1", order_id="A7")])
        >>> model([{"role": "user", "content": "refund A7"}])["tool_calls"][0]["name"]
        'lookup_order'
        >>> model([{"role": "assistant"}, {"role": "tool"}])["content"]
        'I have nothing more to add.'
    """

    def __init__(
        self, script: Sequence[dict[str, Any]], *, then: dict[str, Any] | None = None
    ) -> None:
        self.script = [dict(m) for m in script]
        self.then = then or {"role": "assistant", "content": "I have nothing more to add."}
        self.calls = 0

    def __repr__(self) -> str:
        return f"<ScriptedModel: {len(self.script)} scripted answers>"

    def __call__(self, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The next assistant message for ``messages``."""
        self.calls += 1
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        answer = self.script[turn] if turn < len(self.script) else self.then
        return copy.deepcopy(answer)
