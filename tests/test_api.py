"""The public surface: a pinned ``__all__``, a light import, and imports that point down."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import agentnb

PACKAGE = Path(agentnb.__file__).parent

PUBLIC = {
    "END",
    "START",
    "AgentnbError",
    "ApprovalNotPending",
    "BreakerOpen",
    "Checkpoint",
    "Checkpointer",
    "CircuitBreaker",
    "ConflictingEdit",
    "ConflictingUpdate",
    "Decision",
    "DecisionError",
    "DefinitionError",
    "ExerciseFailed",
    "Event",
    "EventType",
    "Identity",
    "IncompatibleMachine",
    "IncompatibleWorkflow",
    "InvalidAnswer",
    "InstanceConflict",
    "InstanceNotFound",
    "InvalidDecision",
    "InvalidRetention",
    "InvalidState",
    "LeaseLost",
    "MemoryCheckpointer",
    "MissingDependency",
    "NodeContext",
    "NodeFailed",
    "NoQuestion",
    "NodeTimeout",
    "NotAuthorized",
    "PolicyUnavailable",
    "PostgresCheckpointer",
    "RenderError",
    "Retry",
    "RoutingError",
    "Run",
    "RunActive",
    "RunBusy",
    "RunError",
    "RunNotActive",
    "RunNotFound",
    "RunRecord",
    "Send",
    "SchemaError",
    "SchemaVersionError",
    "SqliteCheckpointer",
    "StaleApproval",
    "StateGraph",
    "Status",
    "StepBudgetExhausted",
    "RecursionLimitReached",
    "LegacySuperstep",
    "StepNotCommitted",
    "StepResult",
    "TaskNotNamed",
    "UnknownExercise",
    "StoreError",
    "StoreUnavailable",
    "SyncUnavailable",
    "StoreCorrupt",
    "StoreFileError",
    "StoreFull",
    "StoreReadOnly",
    "TransitionNotAllowed",
    "Worker",
    "Workflow",
    "__version__",
    "ChartInstance",
    "Final",
    "History",
    "ManualClock",
    "Parallel",
    "ScxmlError",
    "State",
    "Statechart",
    "UnsupportedElement",
    "load_scxml",
    "load_statechart",
    "load_xstate",
}


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert set(agentnb.__all__) == PUBLIC
    for name in agentnb.__all__:
        assert getattr(agentnb, name) is not None


def test_every_error_derives_from_the_root() -> None:
    from agentnb import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, errors.AgentnbError), name


def test_every_error_class_is_importable_from_agentnb_and_listed_in_all() -> None:
    from agentnb import errors

    classes = {
        name: obj
        for name, obj in vars(errors).items()
        if isinstance(obj, type)
        and issubclass(obj, errors.AgentnbError)
        and obj.__module__ == errors.__name__
    }
    assert {"AgentnbError", "StaleApproval"} <= set(classes)
    assert sorted(set(classes) - set(agentnb.__all__)) == []
    assert sorted(set(classes) - set(errors.__all__)) == []
    for name, cls in classes.items():
        assert getattr(agentnb, name) is cls, name


def test_every_error_says_it_lives_in_agentnb_errors_whichever_module_defines_it() -> None:
    # Tracebacks, reprs and pickles name the class by its __module__: the private module
    # that writes it (agentnb.errors._runs ...) is not where users import it from.
    from agentnb import errors

    for name in (*errors.__all__, "describe"):
        obj = getattr(errors, name)
        assert obj.__module__ == "agentnb.errors", name
        assert pickle.loads(pickle.dumps(obj)) is obj, name


def test_the_error_modules_import_only_the_standard_library_and_each_other() -> None:
    # Every layer imports agentnb.errors, so it imports nothing of agentnb's; its private
    # modules import the root module, never the package (whose __init__ imports them).
    problems = []
    paths = sorted((PACKAGE / "errors").glob("*.py"))
    assert len(paths) > 1
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["(relative)"]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                stdlib = name.partition(".")[0] in sys.stdlib_module_names
                if not (stdlib or name.startswith("agentnb.errors._")):
                    problems.append(f"{path.name} imports {name}")
    assert problems == []


HEAVY = {
    # optional dependencies
    "asyncio",
    "ipywidgets",
    "IPython",
    "graphviz",
    "anywidget",
    "jupyter_client",
    "jsonschema",
    "yaml",
    "watchfiles",
    "prometheus_client",
    "psycopg",
    # the standard library's heavier corners, loaded by what first needs them: a store
    # (sqlite3), a migration (importlib.resources with tempfile, shutil and lzma), a digest
    # (hashlib, OpenSSL's), a printed time (datetime), a drawing (pathlib)
    "sqlite3",
    "importlib.resources",
    "tempfile",
    "shutil",
    "hashlib",
    "datetime",
    "pathlib",
}
LOADED_WHEN_USED = (
    "agentnb.fsm",
    "agentnb.render",
    "agentnb.widgets",
    "agentnb.store.sql",  # the SQL store, its sql_* parts and the SQLite backend
    "agentnb.store.postgres",
    "agentnb.store.memory",
    "agentnb.store.migrate",
)


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(ast.literal_eval(out.stdout))


def test_importing_agentnb_loads_no_optional_or_heavy_module() -> None:
    loaded = modules_after("import agentnb")
    assert sorted(loaded & HEAVY) == []
    assert sorted(m for m in loaded if m.startswith(LOADED_WHEN_USED)) == []


def test_a_store_named_loads_its_backend_then() -> None:
    loaded = modules_after("import agentnb; agentnb.SqliteCheckpointer(':memory:').close()")
    assert {"sqlite3", "agentnb.store.sqlite", "agentnb.store.migrate"} <= loaded
    assert "agentnb.store.postgres" not in loaded
    for name in agentnb.store.__all__:  # the package's names resolve as its modules' own
        found = getattr(agentnb.store, name)
        assert found.__name__ == name
        assert found.__module__.startswith("agentnb.store.")


# Imports point down only. Level of each part; a module may import its own level or lower.
LEVELS = {
    "agentnb.errors": 1,
    "agentnb._aio": 1,
    "agentnb._json": 1,
    "agentnb._display": 1,
    "agentnb.identity": 1,  # who the process vouches for: stdlib + errors only
    "agentnb._listeners": 1,
    "agentnb._postgres_server": 1,  # a throwaway server (agentnb.testing): stdlib + errors
    "agentnb.store": 2,
    "agentnb.definitions": 2,  # documents, schemas, findings, names, registries: any definition
    "agentnb.graph.state": 2,
    "agentnb.graph": 3,
    "agentnb.fsm": 3,
    "agentnb.fsm.records": 2,  # what a store keeps, so the checkpointer can hold machines
    "agentnb.fsm.memory": 2,
    "agentnb.fsm.storage": 2,  # the machine-store contract a checkpointer names as its type
    "agentnb.examples": 3,
    "agentnb.resilience": 3,
    "agentnb.render": 4,
    "agentnb.teach": 4,  # grades what the store recorded; the CLI's `check` sits above it
    "agentnb.testing": 4,  # helpers for users' tests: above graph, fsm and resilience
    "agentnb.widgets": 5,
    "agentnb.cli": 5,
    "agentnb.__main__": 5,  # ``python -m agentnb``: the cli's entry point and nothing else
    "agentnb.metrics": 5,
    "agentnb.interop": 6,  # other runtimes' graphs as runs; opens their panel lazily
}
TOP = {"agentnb.widgets", "agentnb.cli", "agentnb.metrics"}


def level(module: str) -> tuple[int, str]:
    best = max((k for k in LEVELS if module == k or module.startswith(k + ".")), key=len)
    return LEVELS[best], best


def _is_module(name: str) -> bool:
    where = PACKAGE.parent.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def imports(path: Path) -> tuple[set[str], set[str]]:
    """(imports run at import time, imports inside functions or for type checking only)."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    inner: set[str] = set()
    nested = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        or (isinstance(f, ast.If) and isinstance(f.test, ast.Name) and f.test.id == "TYPE_CHECKING")
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from agentnb.store import sql_steps`` imports the module agentnb.store.sql_steps
            names = [
                node.module,
                *(s for a in node.names if _is_module(s := f"{node.module}.{a.name}")),
            ]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        wanted = {n for n in names if n.startswith("agentnb.")}
        (inner if id(node) in nested else top).update(wanted)
    return top, inner


# agentnb._display (the mixins of the runtime's classes) and agentnb.interop (whose runs
# open their panel) reach up into ``render`` and ``widgets`` lazily, inside their methods:
# nothing else may.
PRESENTATION = ("agentnb.render", "agentnb.widgets")


STORE_BACKENDS = ("agentnb.store.sql", "agentnb.store.postgres")
"""Database backends (``sql`` covers the shared SQL store, its ``sql_*`` parts and
``sqlite``): the runtime never imports one (a workflow compiled without a store gets the
memory one)."""
SHARED_SQL = ("agentnb.store.sql", "agentnb.store.dialect")
"""The SQL store both backends are: it imports neither backend (``sqlite``, ``postgres*``)."""
SQL_BACKENDS = ("agentnb.store.sqlite", "agentnb.store.postgres")
SHARED_FORMAT = {"agentnb.store.chains", "agentnb.store.deltas", "agentnb.store.history"}
"""The checkpoint format every backend calls: it imports none of them."""


def test_imports_point_down_only() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module == "agentnb":
            continue
        mine, part = level(module)
        top, inner = imports(path)
        for target in top | inner:
            theirs, their_part = level(target)
            lazy_presentation = (
                target in inner
                and target not in top
                and target.startswith(PRESENTATION)
                and (module == "agentnb._display" or module.startswith("agentnb.interop"))
            )
            entry_point = module == "agentnb.__main__" and their_part == "agentnb.cli"
            if (theirs > mine and not lazy_presentation) or (
                their_part in TOP and their_part != part and not (lazy_presentation or entry_point)
            ):
                problems.append(f"{module} imports {target}")
            if part.startswith("agentnb.graph") and target.startswith(STORE_BACKENDS):
                problems.append(f"{module} imports a backend: {target}")
            if module in SHARED_FORMAT and target.startswith(
                (*STORE_BACKENDS, "agentnb.store.memory")
            ):
                problems.append(f"{module} (shared by every backend) imports {target}")
            if (
                module.startswith(SHARED_SQL)
                and not module.startswith(SQL_BACKENDS)
                and target.startswith((*SQL_BACKENDS, "agentnb.store.memory"))
            ):
                problems.append(f"{module} (the SQL both backends share) imports {target}")
            if module.startswith("agentnb.store.memory") and target.startswith(STORE_BACKENDS):
                problems.append(f"{module} (the memory store) imports {target}")
    assert problems == []
