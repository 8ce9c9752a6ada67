"""Sphinx configuration: the agentnb documentation site, built offline.

`make docs` runs ``sphinx-build -W --keep-going -n``: every warning fails the build and every
cross-reference must resolve. Nothing is fetched: no intersphinx (its inventories are on the
web), furo's bundled assets only, notebooks rendered from their committed outputs.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import inspect
import re
import runpy
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

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
    (r"py:class", r"(Enum|CollectorRegistry)"),
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


# A reference names an object where it is defined (``agentnb.fsm.instance.MachineStore``,
# as an annotation or a docstring says it); the site documents it at its public home
# (``agentnb.fsm.MachineStore``). The reference is resolved there: the same object, found
# by identity, never by a name that merely looks alike.
PUBLIC_MODULES = [  # the API pages' modules; tests/test_docstrings.py reads it too
    "agentnb",
    "agentnb.graph",
    "agentnb.store",
    "agentnb.fsm",
    "agentnb.errors",
    "agentnb.render",
    "agentnb.teach",
    "agentnb.examples",
    "agentnb.testing",
    "agentnb.widgets",
    "agentnb.metrics",
]
_HOME: dict[int, str] = {}
for _module_name in PUBLIC_MODULES:
    _module = importlib.import_module(_module_name)
    for _name in _module.__all__:
        _object = getattr(_module, _name)
        setattr(_module, _name, _object)  # a lazy name (PEP 562), in the namespace for autodoc
        _HOME.setdefault(id(_object), f"{_module_name}.{_name}")


def _find(path: str) -> tuple[object, list[str]] | None:
    """The object a dotted path names, by its longest importable module prefix."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        found = [obj]
        for part in rest:
            obj = getattr(obj, part, _MISSING)
            if obj is _MISSING:
                break
            found.append(obj)
        return (found, rest) if obj is not _MISSING else None  # type: ignore[return-value]
    return None


_MISSING = object()

# Types that public signatures name but that are not public names themselves (a base
# class, a protocol, a type alias): the API page lists them at its end, so a reference to
# one resolves there. An annotation may name an alias bare (``StateLike``).
SIGNATURE_TYPES = [
    "agentnb._display.Drawable",
    "agentnb._display.HasTimeline",
    "agentnb._display.MachineViewable",
    "agentnb._display.Viewable",
    "agentnb._listeners.Listeners",
    "agentnb.definitions.document.Format",
    "agentnb.definitions.registry.Registry",
    "agentnb.fsm.content.Content",
    "agentnb.fsm.expressions.Expression",
    "agentnb.fsm.expressions.Location",
    "agentnb.fsm.machine.StateLike",
    "agentnb.fsm.nodes.Node",
    "agentnb.fsm.rules.EdgeSpec",
    "agentnb.fsm.timers.Clock",
    "agentnb.graph.approvals.Approvals",
    "agentnb.graph.nodes.Branch",
    "agentnb.graph.nodes.Join",
    "agentnb.graph.nodes.NodeSpec",
    "agentnb.graph.state.Reducer",
    "agentnb.graph.streams.Emitted",
    "agentnb.graph.superstep.Task",
    "agentnb.graph.worker.WorkerStats",
    "agentnb.identity.IdentityProvider",
    "agentnb.render.model.Cluster",
    "agentnb.render.model.Direction",
    "agentnb.render.overlay.OverlayFold",
    "agentnb.store.driving.Driving",
    "agentnb.store.machines.SqliteMachineStore",
    "agentnb.store.postgres_listener.Listener",
    "agentnb.store.sql.SqlCheckpointer",
    "agentnb.teach.registry.Checker",
    "agentnb.widgets._live.LiveView",
]
_LAST = [home.rsplit(".", 1)[1] for home in _HOME.values()]
_PUBLIC_LAST = set(_LAST)  # Node: render's
# a public name written bare in a docstring (:class:`StateGraph`), when only one has it
_UNIQUE = {
    home.rsplit(".", 1)[1]: home
    for home in _HOME.values()
    if _LAST.count(home.rsplit(".", 1)[1]) == 1
}
_BARE = {
    path.rsplit(".", 1)[1]: path
    for path in SIGNATURE_TYPES
    if path.rsplit(".", 1)[1] not in _PUBLIC_LAST
}


def _signature_types_section() -> str:
    lines = ["", "## Types named in signatures", ""]
    lines += [
        "Not public names: the base classes, protocols and type aliases that the signatures",
        "above mention, so that each one a reader clicks on is explained.",
        "",
        "```{eval-rst}",
        ".. py:currentmodule:: None",  # full names, not under the page's last module
        "",
    ]
    for path in SIGNATURE_TYPES:
        found = _find(path)
        if found is None:
            raise LookupError(f"{path} (in SIGNATURE_TYPES) no longer exists")
        obj = found[0][-1]
        if isinstance(obj, type):
            summary = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
            summary = re.sub(r":\w+:`~?([^`]+)`", r"``\1``", summary)  # the summary alone
            lines += [f".. py:class:: {path}", "", f"   {summary}", ""]
        else:
            lines += [f".. py:data:: {path}", "", f"   A type alias: ``{_alias_text(obj)}``.", ""]
    return "\n".join([*lines, "```", ""])


def _alias_text(obj: object) -> str:
    text = str(getattr(obj, "__value__", obj))
    return text.replace("typing.", "").replace("collections.abc.", "")


def _add_signature_types(app, docname, source):  # type: ignore[no-untyped-def]
    if docname == "reference/api":
        source[0] += _signature_types_section()


def _resolve_at_public_home(app, env, node, contnode):  # type: ignore[no-untyped-def]
    if node.get("refdomain") != "py":
        return None
    target = _BARE.get(node["reftarget"]) or _UNIQUE.get(node["reftarget"], node["reftarget"])
    if not target.startswith("agentnb."):
        return None
    if target in SIGNATURE_TYPES:  # an alias is data, whatever role names it
        role = "class" if isinstance(_find(target)[0][-1], type) else "data"  # type: ignore[index]
        return env.get_domain("py").resolve_xref(
            env, node["refdoc"], app.builder, role, target, node, contnode
        )
    hit = _find(target)
    if hit is None:
        return None
    found, rest = hit
    # the innermost object with a public home, and the members under it (a method's class)
    for depth in range(len(found) - 1, -1, -1):
        home = _HOME.get(id(found[depth]))
        if home is not None:
            target = ".".join([home, *rest[depth:]])
            domain = env.get_domain("py")
            return domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], target, node, contnode
            )
    return None


class _BuiltinsAsText(SphinxPostTransform):
    """An annotation's builtin (``type[Enum]``) is text, as the stdlib's types are.

    Without the standard library's inventory Sphinx looks for ``type`` among the site's
    own names and finds the fields called ``type`` (``Event.type``): a wrong link.
    """

    default_priority = 5  # before the references are resolved (10)

    def run(self, **kwargs):  # type: ignore[no-untyped-def]
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("refdomain") == "py" and node["reftarget"] in vars(builtins):
                node.replace_self(node.children or nodes.literal(text=node["reftarget"]))


def _lite_notebooks() -> tuple[tuple[str, ...], dict[str, str]]:
    """What docs/lite/build.py puts in the JupyterLite site (LITE) and leaves out, why."""
    build = runpy.run_path(str(HERE / "lite" / "build.py"))  # not as __main__: no build
    return build["LITE"], build["LEFT_OUT"]


LITE, LEFT_OUT = _lite_notebooks()
LITE_PAGE = "../../lite/lab/index.html?path={}.ipynb"
"""A course page's live version, from docs/_build/html/course/ to the site make lite builds
beside it (docs/_build/lite)."""


def _run_in_the_browser(app, doctree):  # type: ignore[no-untyped-def]
    """Under a course page's title: its "Run in the browser" link, or why it is not there."""
    folder, _, name = app.env.docname.partition("/")
    if folder != "course" or name not in (*LITE, *LEFT_OUT):
        return
    if name in LITE:
        link = nodes.reference("", "Run in the browser", refuri=LITE_PAGE.format(name))
        note = nodes.paragraph(
            "",
            "",
            link,
            nodes.Text(": this notebook in the JupyterLite site "),
            nodes.literal(text="make lite"),
            nodes.Text(" builds beside these pages (Python in the tab, nothing installed)."),
            classes=["lite-link"],
        )
    else:
        note = nodes.paragraph(
            "",
            f"Not in the browser version of the course: this notebook {LEFT_OUT[name]}.",
            classes=["lite-left-out"],
        )
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None:
        section.insert(1, note)


def _page_inputs() -> str:
    """A digest of this file and docs/lite/build.py, which shape every page (the links, the
    lite list) but which Sphinx does not track. Registered as a config value, a change to
    either reads every page again: an incremental build had kept course pages built before
    their "Run in the browser" link."""
    digest = hashlib.sha256()
    for path in (HERE / "conf.py", HERE / "lite" / "build.py"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def setup(app):  # type: ignore[no-untyped-def]
    app.add_config_value("agentnb_page_inputs", _page_inputs(), "env")
    app.connect("doctree-read", _run_in_the_browser)
    app.connect("missing-reference", _resolve_at_public_home)
    app.connect("source-read", _add_signature_types)
    app.add_post_transform(_BuiltinsAsText)
    app.connect("autodoc-process-docstring", _plain_summary, priority=100)
    app.connect("autodoc-process-docstring", _note_module)
    app.connect("autodoc-skip-member", _skip_reexport)
