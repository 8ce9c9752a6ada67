"""Errors of what agentnb runs on: a missing optional dependency, Graphviz, a browser."""

from __future__ import annotations

from agentnb.errors._root import AgentnbError


class MissingDependency(AgentnbError):
    """An optional dependency is not installed.

    Attributes:
        package: what is missing.
        extra: the agentnb extra that brings it (``pip install "agentnb[extra]"``).
        purpose: what it was needed for.
        install: how to install it, when pip cannot (a system program such as Graphviz).

    Example:
        >>> from agentnb import MissingDependency
        >>> error = MissingDependency("psycopg", "postgres", "PostgresCheckpointer")
        >>> print(error)
        psycopg is needed for PostgresCheckpointer but is not installed. Install it with: pip
        install "agentnb[postgres]"
    """

    def __init__(
        self, package: str, extra: str, purpose: str, *, install: str | None = None
    ) -> None:
        self.package = package
        self.extra = extra
        self.purpose = purpose
        self.install = install or f'pip install "agentnb[{extra}]"'
        super().__init__(
            f"{package} is needed for {purpose} but is not installed. "
            f"Install it with: {self.install}"
        )


class RenderError(AgentnbError):
    """Graphviz failed, ran out of time, or produced something unsafe.

    Attributes:
        problem: what went wrong.
        detail: what Graphviz said, if anything.
        fix: what to do about it.

    Example:
        >>> from agentnb import RenderError
        >>> print(RenderError("dot exited with status 1", "syntax error in line 3"))
        dot exited with status 1...
    """

    REPORT = (
        "Export the DOT text with draw(obj, 'x.dot') and report it, with `dot -V`, "
        "to the agentnb issue tracker"
    )

    def __init__(self, problem: str, detail: str = "", *, fix: str = REPORT) -> None:
        self.problem = problem
        self.detail = detail
        self.fix = fix
        said = f": {detail.strip()[:500]}" if detail.strip() else ""
        super().__init__(f"{problem}{said}. {fix}")


class SyncUnavailable(AgentnbError):
    """A sync call cannot wait here: Python runs in the browser (Pyodide), which has no
    threads, and this page cannot suspend a call (no JavaScript Promise Integration).

    Attributes:
        call: the coroutine the sync call would have waited for (``Run.arun`` ...).

    Example:
        >>> print(SyncUnavailable("Run.arun"))  # doctest: +NORMALIZE_WHITESPACE
        A sync call (to Run.arun) cannot wait in this browser: Python runs on the page's
        only thread and the page cannot suspend. Await the async twin instead, e.g.
        `await run.arun()` for `run.run()`, `await run.astep()` for `run.step()`.
    """

    def __init__(self, call: str) -> None:
        self.call = call
        super().__init__(
            f"A sync call (to {call}) cannot wait in this browser: Python runs on the "
            "page's only thread and the page cannot suspend. Await the async twin "
            "instead, e.g. `await run.arun()` for `run.run()`, `await run.astep()` for "
            "`run.step()`."
        )
