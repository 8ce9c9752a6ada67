"""Every public name has an example in its docstring, and the examples run.

The public names are those in ``__all__`` of each module the API reference pages document
(``PUBLIC_MODULES`` in docs/conf.py). The examples are what a student reads first, so each
runs here, cheaper than Sphinx's doctest builder (no second build of the site): the same
docstrings, run with the standard doctest runner in a fresh directory (an example may
write a file).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import runpy
from pathlib import Path

import pytest

import agentnb
from agentnb.teach import registry as exercise_registry

ROOT = Path(__file__).parents[1]

PUBLIC_MODULES: list[str] = runpy.run_path(str(ROOT / "docs" / "conf.py"))["PUBLIC_MODULES"]
"""The modules the API reference pages document (one list: the site's)."""

# Examples that cannot run here are marked ``# doctest: +SKIP``; a name whose examples are
# all skipped is listed with the reason. Nothing else may skip its whole example.
NOT_RUN = {
    "agentnb.PostgresCheckpointer": "connects to a PostgreSQL server",
    "agentnb.testing.ThrowawayPostgres": "starts a PostgreSQL server",
    "agentnb.testing.throwaway_postgres": "starts a PostgreSQL server",
}


def public_names() -> dict[str, object]:
    """Each public object once, under the first public name it has (``agentnb`` first)."""
    names: dict[str, object] = {}
    seen: set[int] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) not in seen:
                seen.add(id(obj))
                names[f"{module_name}.{name}"] = obj
    return names


def carries_docstring(obj: object) -> bool:
    # a constant (a str, an int, a tuple) has no docstring of its own: its type's is
    # shown instead, so it is documented where it is defined (a ``#:`` comment)
    return inspect.isclass(obj) or inspect.isroutine(obj)


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


def own_examples(name: str, obj: object) -> list[doctest.Example]:
    """The examples of ``obj``'s own docstring (not its members')."""
    finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)
    return [example for test in finder.find(obj, name, module=False) for example in test.examples]


def imports(source: str) -> bool:
    return source.startswith(("import ", "from "))


def test_every_public_name_has_an_example_that_runs() -> None:
    missing, skipped = [], []
    for name, obj in public_names().items():
        if not carries_docstring(obj):
            assert isinstance(obj, str | int | float | tuple), name  # a plain value
            continue
        examples = own_examples(name, obj)
        if not examples:
            missing.append(name)
        elif all(e.options.get(doctest.SKIP) for e in examples if not imports(e.source)):
            skipped.append(name)
    assert missing == [], f"public names without an example in their docstring: {missing}"
    assert sorted(skipped) == sorted(NOT_RUN), "examples that never run: " + ", ".join(
        sorted(set(skipped) ^ set(NOT_RUN))
    )


def test_the_check_sees_a_public_name_without_an_example() -> None:
    def plain() -> None:
        """A function, described but not shown."""

    def shown() -> int:
        """A function, shown.

        Example:
            >>> shown()
            1
        """
        return 1

    assert own_examples("plain", plain) == []
    assert [e.source for e in own_examples("shown", shown)] == ["shown()\n"]
    assert not carries_docstring("a constant")
    assert carries_docstring(plain)


def test_every_example_is_collected_to_run() -> None:
    collected = {test.name for test in TESTS}
    for name, obj in public_names().items():
        if carries_docstring(obj) and name not in NOT_RUN:
            assert name in collected or any(c.startswith(f"{name}.") for c in collected), name


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_the_example_runs(
    test: doctest.DocTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # an example may register an exercise: it is forgotten afterwards, so the other tests
    # of this process see the registry as it was
    exercise_registry.exercises()  # the course's own are loaded once, and kept
    monkeypatch.setattr(exercise_registry, "_REGISTRY", dict(exercise_registry._REGISTRY))
    test.globs = {"agentnb": agentnb, **test.globs}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{test.name}: {result.failed} of {result.attempted} failed"
