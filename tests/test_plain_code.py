"""agentnb is plain code a reader can follow: no generated code, no class switching."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agentnb

PACKAGE = Path(agentnb.__file__).parent
GENERATES = {"exec", "eval", "compile"}
"""Builtins that run text as code (``re.compile`` and a method named ``eval`` are not these)."""


def tricks(source: str) -> list[str]:
    """Where ``source`` generates code, builds a class with ``type(name, bases, ns)`` or
    ``types.new_class``, or gives an object another class (``x.__class__ = ...``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in GENERATES:
                found.append(f"line {node.lineno}: {fn.id}()")
            elif isinstance(fn, ast.Name) and fn.id == "type" and len(node.args) == 3:
                found.append(f"line {node.lineno}: type(name, bases, namespace)")
            elif isinstance(fn, ast.Attribute) and fn.attr == "new_class":
                found.append(f"line {node.lineno}: new_class()")
            elif isinstance(fn, ast.Name) and fn.id == "setattr" and len(node.args) == 3:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value == "__class__":
                    found.append(f"line {node.lineno}: setattr(x, '__class__', ...)")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and part.attr == "__class__":
                    found.append(f"line {part.lineno}: .__class__ = ...")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "exec('def f(): pass', scope)",
        "fn = eval('lambda: 1')",
        "code = compile(text, 'x', 'exec')",
        "Open = type('Open', (Base,), {'__slots__': ()})",
        "Open = types.new_class('Open', (Base,))",
        "self.__class__ = Record",
        "view.a, view.__class__ = 1, StateCopy",
        "setattr(view, '__class__', StateCopy)",
    ],
)
def test_each_trick_is_found(source: str) -> None:
    assert tricks(source) != []


def test_plain_code_is_not_taken_for_a_trick() -> None:
    plain = "PATTERN = re.compile('x')\nvalue = self.eval(node)\nkind = type(value)\n"
    assert tricks(plain + "name = obj.__class__.__name__\n") == []


def test_agentnb_generates_no_code_and_switches_no_class() -> None:
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := tricks(path.read_text(encoding="utf-8")))
    }
    assert found == {}
