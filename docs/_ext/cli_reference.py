"""A ``cli-reference`` directive: the ``agentnb`` command's help, read from its argparse parser.

Written here rather than depending on sphinx-argparse: the page is the parser's own help text,
one section per sub-command, so it cannot drift from what ``agentnb COMMAND --help`` prints.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class CliReference(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        from agentnb.cli._parser import command_line

        os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal; a stable width here
        parser = command_line()
        out: list[nodes.Node] = [nodes.literal_block(text=parser.format_help(), language="text")]
        for name, sub in _subcommands(parser).items():
            section = nodes.section(ids=[f"agentnb-{name}"])
            section += nodes.title(text=f"agentnb {name}")
            if sub.description:
                section += nodes.paragraph(text=sub.description)
            section += nodes.literal_block(text=sub.format_help(), language="text")
            out.append(section)
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
