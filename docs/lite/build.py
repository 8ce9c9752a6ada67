"""Build the course as a JupyterLite site: Python in the browser, nothing fetched at run time.

``make lite`` runs ``python docs/lite/build.py --out docs/_build/lite --cache .venv/lite-cache``.
The site holds the course notebooks that need no subprocess and no server (LITE), agentnb and
every dependency as local wheels (browser-requirements.txt, all pure Python), and the Pyodide
runtime from the npm registry at the version jupyterlite-pyodide-kernel pins
(``PYODIDE_VERSION``, checked against the installed kernel). Its lock file is cut down to
the two packages the kernel loads from it (micropip, packaging), shipped beside it, and the
kernel's fallback to PyPI is switched off: a missing package is an error, never a download.

Downloads (Pyodide's tarball, the wheels) are cached in ``--cache`` under their versions,
so a second build fetches nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

PYODIDE_VERSION = "314.0.6"
"""What jupyterlite-pyodide-kernel 0.8.6 pins (its constants.PYODIDE_VERSION)."""
PYODIDE_TARBALL = f"https://registry.npmjs.org/pyodide/-/pyodide-{PYODIDE_VERSION}.tgz"
PYODIDE_INTEGRITY = "sha512-" + (
    "BKDTJyIqFxC4BExLqeRS3f5xvXZIjOt8C3zGLN/Cc7tFxSwvKVhVkchQQ2AGLOtR4YrVOIFxbV8poyDOOmWwxQ=="
)
"""The registry's ``dist.integrity`` of that tarball."""
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
"""The runtime (ES module, its wasm with SQLite linked in, the standard library)."""
LOCKED = {"micropip": "micropip==0.11.1", "packaging": "packaging==26.1"}
"""The packages the kernel loads through Pyodide's lock file: the versions it lists."""

LITE = (
    "01-quickstart",
    "03-state-machines",
    "05-observability",
    "06-parallel-and-subgraphs",
    "07-statecharts",
    "09-agent-loop",
)
"""The course notebooks that run in the browser; each one's page in the docs links to it
(docs/conf.py)."""
LEFT_OUT = {
    "02-human-approval": "decides from another process with the agentnb CLI (a subprocess)",
    "04-reliability": "kills a worker process to show what survives a crash",
    "08-scale-out": "starts a PostgreSQL server and worker processes",
    "10-bring-your-langgraph": (
        "runs LangGraph, whose compiled dependencies (ormsgpack, xxhash, pydantic-core) "
        "this site does not ship"
    ),
}
"""The others, and what they need that a browser tab (or this site) does not have; the docs'
course pages say it too (docs/conf.py)."""

WORKDIR = "/home/pyodide/course"
"""Where the notebooks work in the browser: the kernel's memory file system."""
INSTALL = "agentnb ipywidgets anywidget jsonschema prometheus_client"
INSTALL_CELL = {
    "cell_type": "code",
    "execution_count": None,
    "id": "lite-install",
    "metadata": {},
    "outputs": [],
    "source": [
        "# In the browser: install agentnb from this site's own wheels (nothing is fetched),\n",
        "# and work in the kernel's memory: the browser's drive cannot hold a SQLite database.\n",
        f"%pip install {INSTALL}\n",
        "import os\n",
        f"os.makedirs({WORKDIR!r}, exist_ok=True)\n",
        f"os.chdir({WORKDIR!r})",
    ],
}
"""The first cell of every lite notebook: the Pyodide kernel imports only what is installed,
and the notebook's ``runs/`` goes where SQLite works (agentnb refuses a database on the
drive: see ``keeps_sizes`` in agentnb/store/sqlite.py)."""

FEDERATED = ("jupyterlite-pyodide-kernel", "jupyterlab-widgets", "anywidget")
"""The JupyterLab extensions the site carries (from their wheels; nothing else installed
in this environment is picked up)."""

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
BROWSER_WHEELS = [
    *("--only-binary=:all:", "--no-deps", "--python-version", "3.14"),
    *("--platform", "any", "--implementation", "py", "--abi", "none"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the site goes")
    parser.add_argument("--cache", type=Path, required=True, help="downloads, kept")
    args = parser.parse_args()
    check_kernel_pin()
    cache = args.cache.resolve()
    out = args.out.resolve()
    stage = out.with_name(out.name + "-stage")
    shutil.rmtree(stage, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    stage_pyodide(fetch_pyodide(cache), browser_wheels(cache, LOCKED.values(), "locked"), stage)
    (stage / "pypi").mkdir(parents=True)
    requirements = HERE / "browser-requirements.txt"
    for wheel in [*browser_wheels(cache, read_requirements(requirements)), agentnb_wheel(stage)]:
        shutil.copy2(wheel, stage / "pypi" / wheel.name)
    stage_notebooks(stage / "files")
    federated = browser_wheels(cache, [pinned(name) for name in FEDERATED], "federated")
    lite_build(stage, out, federated)
    configure(out / "jupyter-lite.json")
    shutil.rmtree(stage)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"lite site: {out} ({size / 1e6:.1f} MB)")


def check_kernel_pin() -> None:
    from jupyterlite_pyodide_kernel import constants

    if constants.PYODIDE_VERSION != PYODIDE_VERSION:
        sys.exit(
            f"jupyterlite-pyodide-kernel pins Pyodide {constants.PYODIDE_VERSION}, this build "
            f"{PYODIDE_VERSION}: set PYODIDE_VERSION and PYODIDE_INTEGRITY in {__file__}."
        )


def pinned(name: str) -> str:
    from importlib.metadata import version

    return f"{name}=={version(name)}"


def fetch_pyodide(cache: Path) -> Path:
    """Pyodide's npm tarball, checked against the registry's integrity, unpacked once."""
    unpacked = cache / f"pyodide-{PYODIDE_VERSION}"
    if (unpacked / "package" / "pyodide-lock.json").exists():
        return unpacked / "package"
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    with urllib.request.urlopen(PYODIDE_TARBALL, timeout=120) as answer:
        data = answer.read()
    algorithm, _, expected = PYODIDE_INTEGRITY.partition("-")
    digest = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if digest != expected:
        sys.exit(f"{PYODIDE_TARBALL} does not match its registry integrity {PYODIDE_INTEGRITY}")
    tarball.write_bytes(data)
    partial = unpacked.with_name(unpacked.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(partial, filter="data")
    partial.rename(unpacked)
    return unpacked / "package"


def read_requirements(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def browser_wheels(cache: Path, specs: object, label: str = "browser") -> list[Path]:
    """Pure wheels for the pinned ``specs``, downloaded once into a folder named by them."""
    specs = sorted(specs)  # type: ignore[call-overload]
    key = hashlib.sha256("\n".join(specs).encode()).hexdigest()[:12]
    folder = cache / f"wheels-{label}-{key}"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([*PIP, "download", *BROWSER_WHEELS, "-d", str(folder), *specs], check=True)
        (folder / ".complete").touch()
    return sorted(folder.glob("*.whl"))


def agentnb_wheel(stage: Path) -> Path:
    """This checkout's agentnb as a wheel (pure Python: it has no compiled part)."""
    folder = stage / "agentnb-wheel"
    build = ["wheel", "--no-deps", "--no-build-isolation", "-w", str(folder), str(ROOT)]
    subprocess.run([*PIP, *build], check=True)
    (wheel,) = folder.glob("agentnb-*-py3-none-any.whl")
    return wheel


def stage_pyodide(package: Path, locked: list[Path], stage: Path) -> None:
    """The runtime in the place jupyterlite looks for a local Pyodide, its lock cut down."""
    target = stage / "static" / "pyodide"
    target.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy2(package / name, target / name)
    lock = json.loads((package / "pyodide-lock.json").read_text())
    packages = {}
    for wheel in locked:
        name = wheel.name.split("-")[0]
        entry = dict(lock["packages"][name])
        entry.update(
            file_name=wheel.name,
            version=wheel.name.split("-")[1],
            sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        )
        packages[name] = entry
        shutil.copy2(wheel, target / wheel.name)
    lock["packages"] = packages
    (target / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))


def stage_notebooks(files: Path) -> None:
    """The browser's notebooks: outputs cleared (the reader runs them), agentnb installed by
    the first cell, the Pyodide kernel named; and a README saying which are left out, why."""
    files.mkdir(parents=True)
    for name in LITE:
        notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"], cell["execution_count"] = [], None
        notebook["cells"].insert(0, INSTALL_CELL)
        notebook["metadata"]["kernelspec"] = {
            "name": "python",
            "display_name": "Python (Pyodide)",
            "language": "python",
        }
        (files / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    rows = "\n".join(f"- `{name}.ipynb`" for name in LITE)
    left = "\n".join(f"- `{name}`: {why}" for name, why in LEFT_OUT.items())
    (files / "README.md").write_text(
        "# The agentnb course, in the browser\n\n"
        "Python runs in this tab (Pyodide): nothing is installed, nothing leaves the page. "
        "Open a notebook and run its cells. What a notebook writes (its `runs/` "
        f"databases) is kept in the kernel's memory, in `{WORKDIR}`, and is gone "
        "when the kernel restarts.\n\n"
        f"{rows}\n\n"
        "Left out, because a browser tab cannot do what they show (run them with "
        "`make demo` on a machine with Python):\n\n"
        f"{left}\n"
    )


def lite_build(stage: Path, out: Path, federated: list[Path]) -> None:
    wanted = {name.replace("-", "_") for name in FEDERATED}
    extensions = [w for w in federated if w.name.split("-")[0].lower() in wanted]
    command = [
        *(sys.executable, "-m", "jupyter", "lite", "build"),
        *("--ignore-sys-prefix", "--no-sourcemaps", "--no-unused-shared-packages"),
        *(f"--LiteBuildConfig.federated_extensions={wheel}" for wheel in extensions),
        *("--contents", "files", "--output-dir", str(out)),
    ]
    done = subprocess.run(command, cwd=stage, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"jupyter lite build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def configure(config_path: Path) -> None:
    """The kernel never falls back to PyPI: every package comes from the site."""
    config = json.loads(config_path.read_text())
    settings = config["jupyter-config-data"]["litePluginSettings"]
    settings["@jupyterlite/pyodide-kernel-extension:kernel"]["disablePyPIFallback"] = True
    config_path.write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    main()
