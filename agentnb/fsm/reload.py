"""Hot reload: watch a definition file and swap in each valid, compatible version.

A change is applied only when the new file loads without a single problem *and* every live
instance can follow it (same machine name, current state still defined). Otherwise the old
definition stays in force and the refusal is recorded with its reasons. Instances started
through (or tracked by) the reloader use the swapped definition from their next event on.

Example:
    >>> with MachineReloader("light.json", registry=REGISTRY) as lights:  # doctest: +SKIP
    ...     light = lights.start("crossing-1")
    ...     seen = len(lights.results)
    ...     # ... edit light.json in an editor ...
    ...     print(lights.wait_for_result(seen, timeout=10))
    applied generation 2 from light.json
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from agentnb._aio import has_threads
from agentnb.errors import MissingDependency, SchemaError, SchemaProblem
from agentnb.fsm.document import Format, read_source
from agentnb.fsm.instance import MachineInstance, MachineStore, rebind_all
from agentnb.fsm.loader import Registry, parse_machine
from agentnb.fsm.machine import StateMachine

__all__ = ["MachineReloader", "ReloadResult"]


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """The outcome of one reload attempt.

    Attributes:
        status: ``"applied"`` (the new definition is live) or ``"refused"`` (the old stays).
        generation: the live definition's generation after this attempt (1 = first load).
        problems: why it was refused: file problems, or instances that cannot follow.

    Example:
        >>> import json, pathlib, tempfile
        >>> from agentnb.fsm import MachineReloader
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "door.json"
        >>> door = {"name": "door", "states": ["closed", "open"], "initial": "closed",
        ...         "final": ["open"],
        ...         "transitions": [{"source": "closed", "event": "push", "target": "open"}]}
        >>> _ = path.write_text(json.dumps(door))
        >>> reloader = MachineReloader(path)
        >>> _ = path.write_text(json.dumps({**door, "initial": "nowhere"}))  # a broken edit
        >>> result = reloader.reload()
        >>> result.status, [problem.path for problem in result.problems]
        ('refused', ['$.initial'])
        >>> reloader.machine.initial  # the last valid machine keeps running
        'closed'
        >>> reloader.close()
    """

    status: Literal["applied", "refused"]
    path: str
    generation: int
    problems: tuple[SchemaProblem, ...]
    at: float

    @property
    def applied(self) -> bool:
        """True when the new definition went live."""
        return self.status == "applied"

    def __str__(self) -> str:
        head = f"{self.status} generation {self.generation} from {self.path}"
        return "\n  - ".join([head, *map(str, self.problems)])


class MachineReloader:
    """A machine loaded from ``path`` that follows the file's valid changes.

    Args:
        path: the JSON or YAML definition file.
        registry: the guards, actions and hooks the file may name.
        on_reload: called (in the watcher thread) with every :class:`ReloadResult`.
        format: ``"json"`` or ``"yaml"``; by default from the suffix.
        force_polling: poll instead of OS notifications (network drives, some containers).
        debounce_ms: the longest a burst of changes is grouped into one reload.

    Raises:
        SchemaError: the file is unreadable or invalid at the start (there is nothing to
            keep running).

    Use it as a context manager (or call :meth:`watch` and :meth:`close`); :meth:`reload`
    reloads on demand without watching.

    Example:
        >>> import json, pathlib, tempfile
        >>> from agentnb.fsm import MachineReloader
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "door.json"
        >>> door = {"name": "door", "states": ["closed", "open"], "initial": "closed",
        ...         "final": ["open"],
        ...         "transitions": [{"source": "closed", "event": "push", "target": "open"}]}
        >>> _ = path.write_text(json.dumps(door))
        >>> reloader = MachineReloader(path)
        >>> door["states"].append("ajar")  # an edit that still validates
        >>> door["transitions"] += [{"source": "closed", "event": "nudge", "target": "ajar"},
        ...                         {"source": "ajar", "event": "push", "target": "open"}]
        >>> _ = path.write_text(json.dumps(door))
        >>> reloader.reload().status, reloader.machine.states
        ('applied', ('closed', 'open', 'ajar'))
        >>> reloader.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        registry: Registry | None = None,
        on_reload: Callable[[ReloadResult], None] | None = None,
        format: Format | None = None,
        force_polling: bool | None = None,
        debounce_ms: int = 400,
    ) -> None:
        self.path = Path(path).absolute()
        self._registry: Mapping[str, Any] = dict(registry or {})
        self._on_reload = on_reload
        self._format = format
        self._force_polling = force_polling
        self._debounce_ms = debounce_ms
        self._changed = threading.Condition()
        self._reload_lock = threading.Lock()
        self._results: list[ReloadResult] = []
        self._instances: weakref.WeakSet[MachineInstance] = weakref.WeakSet()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._read_on_wait = False  # watching in the browser: see _watch_in_browser
        self.callback_errors: list[BaseException] = []
        """Exceptions raised by ``on_reload``; kept so a faulty callback cannot stop watching."""
        self.watch_error: BaseException | None = None
        """Why the watcher stopped on its own, if it did."""
        content, digest, fmt = self._read()
        self._machine = self._parse(content, fmt).freeze()
        self._digest = digest
        self._generation = 1

    def __repr__(self) -> str:
        watching = "watching" if self.watching else "not watching"
        return f"<MachineReloader {str(self.path)!r}: generation {self._generation}, {watching}>"

    @property
    def machine(self) -> StateMachine:
        """The live definition."""
        return self._machine

    @property
    def generation(self) -> int:
        """How many definitions have been live (1 until the first applied reload)."""
        return self._generation

    @property
    def results(self) -> list[ReloadResult]:
        """Every reload attempt so far, oldest first (unchanged content is not an attempt)."""
        with self._changed:
            return list(self._results)

    @property
    def watching(self) -> bool:
        """True while the watcher thread runs (in the browser: until :meth:`close`)."""
        return self._read_on_wait or (self._thread is not None and self._thread.is_alive())

    # -- instances --------------------------------------------------------------------

    def start(
        self,
        instance_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        *,
        strict: bool = True,
        store: MachineStore | None = None,
    ) -> MachineInstance:
        """Start an instance of the live definition that follows later reloads."""
        with self._reload_lock:
            instance = self._machine.start(instance_id, context, strict=strict, store=store)
            self._instances.add(instance)
        return instance

    def track(self, instance: MachineInstance) -> None:
        """Make an existing instance follow this file's definition from now on.

        Raises:
            IncompatibleMachine: the instance cannot follow the live definition.
        """
        with self._reload_lock:
            instance.rebind(self._machine)
            self._instances.add(instance)

    # -- reloading --------------------------------------------------------------------

    def reload(self) -> ReloadResult:
        """Load the file now and swap it in if valid and compatible; record the result."""
        with self._reload_lock:
            try:
                content, digest, fmt = self._read()
            except SchemaError as error:
                return self._record("refused", error.problems)
            return self._attempt(content, digest, fmt)

    def wait_for_result(self, after: int, timeout: float) -> ReloadResult | None:
        """Block until attempt number ``after + 1`` is recorded; return it (None on timeout).

        Read ``len(reloader.results)`` before changing the file and pass it as ``after``.
        """
        if self._read_on_wait:
            self._on_change()
        with self._changed:
            self._changed.wait_for(lambda: len(self._results) > after, timeout=timeout)
            return self._results[after] if len(self._results) > after else None

    def _attempt(self, content: str | bytes, digest: str, fmt: Format | None) -> ReloadResult:
        self._digest = digest
        try:
            machine = self._parse(content, fmt)
        except SchemaError as error:
            return self._record("refused", error.problems)
        problems = []
        if machine.name != self._machine.name:
            problems.append(
                SchemaProblem(
                    "$.name",
                    f"the name changed from {self._machine.name!r} to {machine.name!r}",
                    "Keep the name: live instances were started under it",
                )
            )
        else:
            for instance, reason in rebind_all(list(self._instances), machine):
                problems.append(
                    SchemaProblem(
                        "$.states",
                        f"instance {instance.id!r} cannot follow: {reason}",
                        "Keep the state until no instance is in it",
                    )
                )
        if problems:
            return self._record("refused", problems)
        self._machine = machine
        self._generation += 1
        return self._record("applied", [])

    def _read(self) -> tuple[str | bytes, str, Format | None]:
        content, _, fmt = read_source(self.path, self._format)
        raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        return content, hashlib.sha256(raw).hexdigest(), fmt

    def _parse(self, content: str | bytes, fmt: Format | None) -> StateMachine:
        return parse_machine(content, source=str(self.path), format=fmt, registry=self._registry)

    def _record(
        self, status: Literal["applied", "refused"], problems: list[SchemaProblem]
    ) -> ReloadResult:
        result = ReloadResult(
            status, str(self.path), self._generation, tuple(problems), time.time()
        )
        with self._changed:
            self._results.append(result)
            self._changed.notify_all()
        if self._on_reload is not None:
            try:
                self._on_reload(result)
            except Exception as error:  # a faulty callback must not stop the watcher
                self.callback_errors.append(error)
        return result

    def _on_change(self) -> None:
        with self._reload_lock:
            try:
                content, digest, fmt = self._read()
            except SchemaError as error:
                # Editors replace files by rename: a moment without the file is normal.
                if self.path.exists():
                    self._record("refused", error.problems)
                return
            if digest != self._digest:
                self._attempt(content, digest, fmt)

    # -- watching ---------------------------------------------------------------------

    def watch(self, ready_timeout: float = 10.0) -> Self:
        """Start watching the file in a background thread; return once it is watching.

        Raises:
            MissingDependency: ``watchfiles`` is not installed.
            OSError: the operating system refused the watch (e.g. too many watches).
        """
        if not has_threads():
            return self._watch_in_browser()
        try:
            import watchfiles  # noqa: F401  (fail here, in the caller's thread)
        except ImportError:
            raise MissingDependency("watchfiles", "config", "hot reload") from None
        if self.watching:
            return self
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="agentnb-reload", daemon=True)
        self._thread.start()
        self._ready.wait(ready_timeout)
        if self.watch_error is not None and not self.watching:
            raise self.watch_error
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop watching (idempotent); the live definition stays usable."""
        self._stop.set()
        self._read_on_wait = False
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _watch_in_browser(self) -> Self:
        """In the browser (Pyodide) there is no watcher thread, and nothing else writes the
        file while a cell runs: the file is read again when a result is waited for."""
        self._read_on_wait = True
        return self

    def __enter__(self) -> Self:
        return self.watch()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self) -> None:
        import watchfiles

        target = os.path.normcase(str(self.path.resolve()))

        def is_target(_change: watchfiles.Change, changed: str) -> bool:
            return os.path.normcase(str(Path(changed).resolve())) == target

        try:
            # Watch the directory, not the file: editors save by writing a new file and
            # renaming it over the old one, which a watch on the old inode would miss.
            for changes in watchfiles.watch(
                self.path.parent,
                watch_filter=is_target,
                debounce=self._debounce_ms,
                step=50,
                stop_event=self._stop,
                rust_timeout=100,
                yield_on_timeout=True,  # the first (empty) yield says the watch is set up
                raise_interrupt=False,
                recursive=False,
                force_polling=self._force_polling,
            ):
                self._ready.set()
                if changes:
                    self._on_change()
        except Exception as error:  # reported through watch_error, not a dead silent thread
            self.watch_error = error
        finally:
            self._ready.set()
