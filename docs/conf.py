"""Sphinx configuration: the agentnb documentation site, built offline.

`make docs` runs ``sphinx-build -W --keep-going -n``: every warning fails the build and every
cross-reference must resolve. Nothing is fetched: no intersphinx (its inventories are on the
web), furo's bundled assets only, notebooks rendered from their committed outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))  # this checkout's agentnb, not an installed one
sys.path.insert(0, str(HERE / "_ext"))

import agentnb  # noqa: E402

# agentnb imports a few names on first use (PEP 562 __getattr__); autodoc lists a module's
# members from its namespace, so the build resolves them first.
for _name in agentnb.__all__:
    setattr(agentnb, _name, getattr(agentnb, _name))

project = "agentnb"
author = "agentnb developers"
copyright = "agentnb developers"  # noqa: A001
release = version = agentnb.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "cli_reference",
]

# The course's notebooks are rendered from the outputs committed under notebooks/ (nbval
# checks those outputs in make test): a docs build runs no kernel.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = [
    "myst.header",  # notebooks start their own numbering of headings
    # An annotation's ``type`` (the builtin) also matches fields named ``type``/``event``;
    # Sphinx warns that the reference is ambiguous. Unresolved ones still fail the build.
    "ref.python",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "README.md", "lite"]

html_theme = "furo"
html_title = f"agentnb {release}"
html_static_path: list[str] = []
html_theme_options = {"navigation_with_keys": True}
# Pygments' styles only; furo ships its fonts as the system stack (no web fonts).
html_show_sourcelink = False

autodoc_default_options = {
    "members": True,
    "undoc-members": False,
    "show-inheritance": True,
    # Run's and Checkpointer's methods live in the classes they are built from; a reader
    # looks for them on the public class. The builtins' own members are left out.
    "inherited-members": "object,BaseException,Exception,dict,tuple,str,int,Enum,ABC",
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # a dataclass's "Attributes:" are fields, not a second description

# Nitpicky, but intersphinx cannot fetch the standard library's inventory offline: a
# reference to a stdlib or third-party type is accepted by name.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(typing|typing_extensions|collections\.abc|enum|abc|asyncio|concurrent|"
     r"pathlib|datetime|sqlite3|threading|contextlib|types|os|argparse|io|json|re|"
     r"dataclasses|logging|ipywidgets|anywidget|traitlets|psycopg|psycopg_pool|"
     r"prometheus_client|graphviz|IPython)(\..*)?"),
    (r"py:.*", r"(int|str|float|bool|bytes|object|dict|list|tuple|set|frozenset|type|None|"
     r"Exception|BaseException|ValueError|TypeError|KeyError|LookupError|RuntimeError|"
     r"TimeoutError|OSError|Ellipsis|NotImplemented|callable|optional|Any|Callable|"
     r"Iterator|Iterable|Mapping|Sequence|AsyncIterator|Awaitable|Coroutine|Self|T|P|R|"
     r"NoneType|ExceptionGroup|Generator|AsyncGenerator|MutableMapping|Literal)"),
    # Internal modules and their types: annotations and docstrings name them, the site
    # documents the public names they are re-exported as.
    (r"py:.*", r"agentnb\._.*"),
    # Type aliases, as annotations name them (StateLike = str | Enum, ...): not classes.
    (r"py:class", r"(StateLike|IdentityProvider|Reducer|Registry|Format|Direction|Task|"
     r"Emitted|Checker|Enum|CollectorRegistry|Clock|SqliteMachineStore)"),
    (r"py:.*", r"agentnb\.(graph|store|fsm|render|teach|metrics|cli|widgets)\.[a-z_]+(\..*)?"),
    (r"py:.*", r"agentnb\.(resilience|identity)(\..*)?"),
]

# Each public object is documented once, at its public home: the subpackage pages skip what
# the top-level package re-exports. autodoc processes a module's docstring before it
# filters the module's members, so the module being documented is known when it asks.
_TOP = {name: getattr(agentnb, name) for name in agentnb.__all__}
_current_module = {"name": ""}


def _note_module(app, what, name, obj, options, lines):  # type: ignore[no-untyped-def]
    if what == "module":
        _current_module["name"] = name


_FOREIGN = ("ipywidgets", "traitlets", "anywidget", "comm")


def _skip_reexport(app, what, name, obj, skip, options):  # type: ignore[no-untyped-def]
    if str(getattr(obj, "__module__", "") or "").startswith(_FOREIGN):
        return True  # a widget's inherited ipywidgets API is documented by ipywidgets
    module = _current_module["name"]
    if module and module != "agentnb" and what == "module" and _TOP.get(name) is obj:
        return True
    return None


def _plain_summary(app, what, name, obj, options, lines):  # type: ignore[no-untyped-def]
    # napoleon reads a property's "Summary: more" first line as "type: description"; ours
    # are sentences (their types are in the annotations), so the colon is not a type's.
    if what in ("property", "attribute") and lines and ": " in lines[0]:
        lines[0] = lines[0].replace(": ", " — ", 1)


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-process-docstring", _plain_summary, priority=100)
    app.connect("autodoc-process-docstring", _note_module)
    app.connect("autodoc-skip-member", _skip_reexport)
