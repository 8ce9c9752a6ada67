"""Re-execute every notebook here (and in solutions/) and store its outputs (``make notebooks``).

Outputs are committed and checked by nbval in ``make test``, so they must be reproducible:
runs use fixed ids, nothing prints times or random values, and widget state is not stored
(it would add megabytes of metadata and nbval ignores it anyway).

Usage: python notebooks/regenerate.py [NOTEBOOK ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def regenerate(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,
    )
    client.execute()
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)
    print(f"regenerated {path.relative_to(HERE.parent)}")


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [
        *sorted(HERE.glob("*.ipynb")),
        *sorted((HERE / "solutions").glob("*.ipynb")),
    ]
    for path in paths:
        regenerate(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
