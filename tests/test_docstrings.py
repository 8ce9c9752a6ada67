"""The examples in the public names' docstrings — the ones the API reference pages show — run.

Cheaper than Sphinx's doctest builder (no second build of the site): the same docstrings,
found through each public module's ``__all__``, run with the standard doctest runner in a
fresh directory (an example may write a file).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
from pathlib import Path

import pytest

import agentnb

PUBLIC_MODULES = [
    "agentnb",
    "agentnb.graph",
    "agentnb.store",
    "agentnb.fsm",
    "agentnb.errors",
    "agentnb.render",
    "agentnb.teach",
    "agentnb.examples",
    "agentnb.testing",
    "agentnb.metrics",
]


def public_doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    seen: set[str] = set()
    found = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for test in finder.find(module, module_name):  # the module docstring itself
            if test.name == module_name and test.name not in seen:
                seen.add(test.name)
                found.append(test)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (callable(obj) or isinstance(obj, type)):
                continue
            home = inspect.getmodule(obj)  # an example sees its own module's names
            globs = dict(vars(home)) if home else {}
            for test in finder.find(obj, f"{module_name}.{name}", module=False, globs=globs):
                # one run per docstring, however many modules re-export its object
                key = f"{getattr(obj, '__qualname__', name)}{test.name[len(module_name) :]}"
                key = f"{getattr(home, '__name__', '')}:{key}"
                if test.examples and key not in seen:
                    seen.add(key)
                    found.append(test)
    return found


TESTS = public_doctests()


def test_public_docstrings_carry_examples() -> None:
    # a floor, not the goal (every public name with an example): it only rises
    assert len(TESTS) >= 10
    assert {t.name for t in TESTS} >= {"agentnb.testing.capture_events"}


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_the_example_runs(
    test: doctest.DocTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    test.globs = {"agentnb": agentnb, **test.globs}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{test.name}: {result.failed} of {result.attempted} failed"
