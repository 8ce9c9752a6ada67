"""The README's Python code blocks run, then the guide pages', in order, in a fresh directory.

The guides continue the README's quickstart (its ``store``, ``workflow`` and ``plan``), so they
run in its namespace, in the order the README held them before they moved to docs/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
GUIDES = [
    ROOT / "docs" / "guides" / name
    for name in (
        "approval.md",
        "workers.md",
        "observability.md",
        "durability.md",
        "workflows.md",
        "state-machines.md",
    )
] + [ROOT / "docs" / "coming-from.md"]


def python_blocks(page: Path = README) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def test_the_readme_has_runnable_examples_and_shows_both_commands() -> None:
    text = README.read_text()
    assert len(python_blocks()) >= 4
    assert "make demo" in text
    assert "make test" in text
    assert text.index("make demo") < text.index("```python")


def test_the_readme_code_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    for page in [README, *GUIDES]:
        for number, block in enumerate(python_blocks(page), start=1):
            code = compile(block, f"{page.relative_to(ROOT)} block {number}", "exec")
            exec(code, namespace)
    assert namespace["refunds"] == [800, 900, 50]
    assert namespace["run"].status == "completed"
    namespace["store"].close()


def test_the_approval_guide_states_plainly_what_happens_when_a_question_is_answered() -> None:
    text = " ".join((ROOT / "docs" / "guides" / "approval.md").read_text().split())
    assert "What happens on resume, plainly: **the node runs again from its start**" in text
    assert "`ctx.interrupt` then returns the recorded answer" in text
    assert "except what went through `ctx.once`, which returns its recorded result" in text
    assert "`agentnb respond RUN --db FILE --value JSON --as NAME [--task TASK]`" in text
