"""``check`` and ``grade``: gather the evidence, run the exercise's checker, say the verdict."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentnb.errors import ExerciseFailed, StoreError
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import lookup
from agentnb.teach.verdict import Result

if TYPE_CHECKING:
    from agentnb.fsm.instance import MachineInstance
    from agentnb.graph.run import Run
    from agentnb.store.base import Checkpointer

__all__ = ["check", "grade"]


@contextlib.contextmanager
def _evidence(
    db: str | os.PathLike[str] | None,
    store: Checkpointer | None,
    run: Run | None,
    instance: MachineInstance | None,
    answer: Any,
) -> Iterator[Evidence]:
    opened: Checkpointer | None = None
    if db is not None:
        path = Path(db)
        if not path.is_file():
            raise StoreError(
                f"there is no database at {os.fspath(db)!r}. Run the notebook's cells that "
                "create it first, or pass the .sqlite3 file you want graded."
            )
        from agentnb.store.sqlite import SqliteCheckpointer

        store = opened = SqliteCheckpointer(path)
    if store is None and run is not None:
        store = run.workflow.checkpointer
    machines = getattr(store, "machines", None) if store is not None else None
    if instance is not None and machines is None:
        machines = instance.store
    try:
        yield Evidence(
            store,
            machines=machines,
            run_ids=None if run is None else [run.run_id],
            instance=instance,
            answer=answer,
        )
    finally:
        if opened is not None:
            opened.close()


def grade(
    exercise: str,
    *,
    db: str | os.PathLike[str] | None = None,
    store: Checkpointer | None = None,
    run: Run | None = None,
    instance: MachineInstance | None = None,
    answer: Any = None,
) -> Result:
    """Grade ``exercise`` from what was recorded, without printing anything.

    Args:
        exercise: its id, e.g. ``"02.1"`` (``agentnb.teach.exercises()`` lists them).
        db: a ``.sqlite3`` file to grade as a whole (a submission).
        store: a checkpointer to grade as a whole: the very store a notebook wrote to
            (safer than ``db`` while that store is open: a file deleted and created again
            under the same name is another database).
        run: grade only this run (in its workflow's checkpointer unless ``store``/``db``).
        instance: grade only this state-machine instance.
        answer: a prediction the exercise asks for, compared with what was recorded.

    Raises:
        UnknownExercise: no exercise has this id.
        StoreError: ``db`` names no file.

    Example:
        >>> from agentnb.examples import build_refund_workflow
        >>> from agentnb.teach import grade
        >>> run = build_refund_workflow().start({"requested": 800}, run_id="r1").run()  # pauses
        >>> _ = run.reject(by="ada")
        >>> result = grade("01.1", run=run)
        >>> bool(result)
        True
        >>> print(result.observed)
        run 'r1' rejected before `human_approval`; only `planner` ran; no side effect happened
    """
    found = lookup(exercise)
    with _evidence(db, store, run, instance, answer) as evidence:
        outcome = found.checker(evidence)
    hint = None if outcome.passed else (outcome.hint or found.hint)
    source = store if store is not None else getattr(run, "workflow", None)
    read, warning = _read_from(db, source)
    return Result(found.id, found.title, outcome.passed, outcome.observed, hint, read, warning)


def _read_from(db: str | os.PathLike[str] | None, source: Any) -> tuple[str | None, str | None]:
    """The file a verdict was read from, as the student names it — ``db`` as given, else the
    path of a SQLite store (a workflow's checkpointer), relative to the working directory when
    inside it — and a warning when the records may be in another file than the one read.

    A ✗ shows the file, so grading the wrong file cannot pass unnoticed; the warning shows
    either way. Two ways to read another file than the student wrote to, both what a
    notebook's cell deleting ``runs/*.sqlite3*`` leaves: the store graded still has the
    deleted (or since replaced) file open; or this file is the new one, and a store of this
    kernel opened before still writes to the deleted one.
    """
    from agentnb.store.sqlite import SqliteCheckpointer

    store = getattr(source, "checkpointer", source)
    if db is not None:
        path = os.fspath(db)
    elif isinstance(store, SqliteCheckpointer) and store.file_status() is None:
        path = store.path  # a file only: a server's address is none, and may carry a password
    elif isinstance(store, SqliteCheckpointer):
        name = _shown(store.path)
        return f"{name} ({store.file_status()} since this store opened it)", (
            f"the store graded still uses the file it opened, and {name} is no longer that "
            f"file: what was recorded is not in {name}. Run the cell that opens the store "
            "again, then the exercise's cells (a new run on the new store)."
        )
    else:
        return None, None
    if path == ":memory:":
        return None, None
    name = _shown(path)
    if _deleted_twin_open(path):
        return name, (
            f"this kernel still has an earlier {name} open, deleted since: runs made on a "
            "store opened before its file was deleted are recorded there, not in the file "
            "read. Run the cells that build the exercise's workflows on the new store again."
        )
    return name, None


def _shown(path: str) -> str:
    """``path`` relative to the working directory when inside it, else as it is."""
    with contextlib.suppress(ValueError):  # another drive (Windows)
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            return relative
    return path


def _deleted_twin_open(path: str) -> bool:
    """Whether this process holds open a deleted file that was at ``path`` (Linux's
    ``/proc/self/fd`` names it ``PATH (deleted)``; elsewhere nothing is known: False)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return False
    gone = os.path.realpath(path) + " (deleted)"
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == gone:
                return True
    return False


def check(
    exercise: str,
    *,
    db: str | os.PathLike[str] | None = None,
    store: Checkpointer | None = None,
    run: Run | None = None,
    instance: MachineInstance | None = None,
    answer: Any = None,
    strict: bool | None = None,
) -> None:
    """Grade ``exercise`` (see :func:`grade`) and print ✓, or ✗ with a hint.

    Args:
        strict: raise :class:`~agentnb.errors.ExerciseFailed` when it is not done — for an
            autograder (an nbgrader test cell passes when it raises nothing). By default
            strict only while nbgrader executes the notebook (``NBGRADER_EXECUTION`` is
            ``autograde`` or ``validate``), so one notebook serves students and graders.

    Example:
        >>> from agentnb.examples import build_refund_workflow
        >>> from agentnb.teach import check
        >>> run = build_refund_workflow().start({"requested": 800})
        >>> _ = run.run()
        >>> check("01.1", run=run)  # doctest: +ELLIPSIS
        ✗ 01.1 Reject a big refund: ...pending...
          hint: ...
    """
    result = grade(exercise, db=db, store=store, run=run, instance=instance, answer=answer)
    print(result)
    if strict is None:
        strict = os.environ.get("NBGRADER_EXECUTION", "").lower() in ("autograde", "validate")
    if strict and not result.passed:
        raise ExerciseFailed(result)
