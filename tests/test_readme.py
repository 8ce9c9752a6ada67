"""The README's Python code blocks run, in order, in a fresh directory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_runnable_examples_and_shows_both_commands() -> None:
    text = README.read_text()
    assert len(python_blocks()) >= 4
    assert "make demo" in text
    assert "make test" in text
    assert text.index("make demo") < text.index("```python")


def test_the_readme_code_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    for number, block in enumerate(python_blocks(), start=1):
        code = compile(block, f"README.md block {number}", "exec")
        exec(code, namespace)
    assert namespace["refunds"] == [800, 900, 50]
    assert namespace["run"].status == "completed"
    namespace["store"].close()


def test_the_readme_states_plainly_what_happens_when_a_question_is_answered() -> None:
    text = " ".join(README.read_text().split())
    assert "What happens on resume, plainly: **the node runs again from its start**" in text
    assert "`ctx.interrupt` then returns the recorded answer" in text
    assert "except what went through `ctx.once`, which returns its recorded result" in text
    assert "`agentnb respond RUN --db FILE --value JSON --as NAME [--task TASK]`" in text
