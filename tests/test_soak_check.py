"""The soak's final check (bench/soak.py) passes a sound database and names what is broken."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from agentnb import SqliteCheckpointer

SOAK = Path(__file__).parents[1] / "bench" / "soak.py"


def load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("soak", module)
    spec.loader.exec_module(module)
    return module


def test_the_soak_check_passes_a_sound_database_and_names_each_broken_invariant(
    tmp_path: Path,
) -> None:
    soak = load_soak()
    db = str(tmp_path / "soak.sqlite3")
    with SqliteCheckpointer(db) as store:
        wf = soak.build_workflow(store, 6)

        def start(run_id: str, decide: str | None) -> None:
            run = wf.start({"count": 0, "amount": 5, "messages": []}, run_id=run_id)
            run.run()
            if decide:
                getattr(run, decide)(by="soak-test")
                run.run()

        start("yes", "approve")
        start("no", "reject")
        assert wf.attach("yes").state["count"] == 6
        assert soak.verify(db, 6, {"yes": "approved", "no": "rejected"}, 2) == []
        start("later", None)

    wrong = soak.verify(db, 6, {"yes": "rejected", "no": "approved"}, 4)
    assert "3 runs in the database, the workers started 4" in wrong
    assert "yes: rejected, but ended completed" in wrong
    assert "no: approved, but ended rejected" in wrong
    assert "later: never decided, ended pending" in wrong
    assert "no: approved but paid []" in wrong
    assert any(p.startswith("yes: rejected but ran 6 nodes") for p in wrong)


def test_the_soak_measures_rss_growth_after_the_first_fifth_of_the_work() -> None:
    soak = load_soak()
    samples = [[0, 10_000], [10, 30_000], [20, 30_500], [50, 31_000], [100, 30_800]]
    assert soak.rss_growth_kib(samples) == (30_500, 500)
    assert soak.rss_growth_kib([]) == (0, 0)
