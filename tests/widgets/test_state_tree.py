"""The state tree's words for collections, checked by running live.js under Node.

The tree is drawn by the browser; its text is a pure function of the value, so it is run
here on a small stand-in for ``document`` (elements with a class, text and children).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import agentnb.widgets

LIVE_JS = Path(agentnb.widgets.__file__).parent / "static" / "live.js"
NODE = shutil.which("node")

# A stand-in DOM: enough for h(), details and classList; `text(el)` flattens an element.
HARNESS = """
class El {
  constructor(tag) { this.tag = tag; this.className = ""; this.children = []; this.textContent = "";
    this.classList = { add: (c) => { this.className += " " + c; } }; this.open = false; }
  append(...kids) { this.children.push(...kids); }
  addEventListener() {}
}
globalThis.document = { createElement: (tag) => new El(tag) };
function text(el) { return [el.textContent, ...el.children.map(text)].filter(Boolean).join(" "); }
function leaf(el) { return el.className.includes("-leaf"); }
const shown = {};
for (const [key, value] of Object.entries(VALUES)) {
  const item = treeNode(key, value, `/${key}`, new Map(), false, "rv");
  const summary = item.children[0] && item.children[0].children[0];
  shown[key] = { leaf: leaf(item), head: leaf(item) ? text(item) : text(summary) };
}
console.log(JSON.stringify(shown));
"""


def tree_heads(values: dict[str, object]) -> dict[str, dict[str, object]]:
    assert NODE is not None
    source = LIVE_JS.read_text() + f"\nconst VALUES = {json.dumps(values)};\n" + HARNESS
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", source],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    shown: dict[str, dict[str, object]] = json.loads(done.stdout)
    return shown


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the panel's JavaScript")
def test_an_empty_collection_reads_as_json_and_a_full_one_gives_its_size_in_words() -> None:
    heads = tree_heads(
        {"notes": [], "meta": {}, "one": ["a"], "three": [1, 2, 3], "keys": {"a": 1, "b": 2}}
    )
    assert heads == {
        "notes": {"leaf": True, "head": "notes []"},
        "meta": {"leaf": True, "head": "meta {}"},
        "one": {"leaf": False, "head": "one [1 item]"},
        "three": {"leaf": False, "head": "three [3 items]"},
        "keys": {"leaf": False, "head": "keys {2 keys}"},
    }
