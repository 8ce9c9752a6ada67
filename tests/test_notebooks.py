"""The teaching notebooks: outputs committed, no widget state stored, no network used.

Their outputs are compared by nbval in ``make test``; these tests check what nbval cannot.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))

# Runs first in the kernel: any connection or name lookup that leaves this machine is
# recorded (and refused), so the last cell can report them.
GUARD = r"""
import socket as _socket
_agentnb_net = []
_real_connect = _socket.socket.connect
_real_getaddrinfo = _socket.getaddrinfo

def _local(host):
    return str(host).startswith(("127.", "::1", "localhost", "/")) or host in ("", None)

def _connect(self, address, *args):
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (_socket.AF_INET, _socket.AF_INET6) and not _local(host):
        _agentnb_net.append(("connect", str(address)))
        raise OSError("network access is not allowed in the teaching notebooks")
    return _real_connect(self, address, *args)

def _getaddrinfo(host, *args, **kwargs):
    if not _local(host):
        _agentnb_net.append(("lookup", str(host)))
        raise OSError("network access is not allowed in the teaching notebooks")
    return _real_getaddrinfo(host, *args, **kwargs)

_socket.socket.connect = _connect
_socket.getaddrinfo = _getaddrinfo
"""
REPORT = "import json; print(json.dumps(_agentnb_net))"


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_has_committed_outputs_and_no_widget_state(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert any(c.outputs for c in code), f"{path.name} has no committed outputs"
    assert all(c.execution_count is not None for c in code), f"{path.name}: unexecuted cells"
    assert "widgets" not in notebook.metadata
    assert path.stat().st_size < 1_000_000
    assert notebook.cells[-1].cell_type == "markdown"
    assert "Exercises" in notebook.cells[-1].source


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_runs_offline_without_a_network_request(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(GUARD))
    notebook.cells.append(nbformat.v4.new_code_cell(REPORT))
    client = NotebookClient(
        notebook,
        timeout=60,  # a hang guard, not a speed check
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,
    )
    client.execute()
    report = notebook.cells[-1].outputs[0]["text"]
    assert json.loads(report) == []
