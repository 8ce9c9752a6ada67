"""A safe evaluator for statechart conditions and expressions: an allow-listed AST walker.

Definition files never run code. An expression such as ``Var1 + 1``, ``_event.data['n'] > 3``
or ``In('playing') and not muted`` is parsed with :mod:`ast` and *interpreted* here, node by
node, over the datamodel; nothing is compiled or passed to ``eval``. What is allowed:
literals (numbers, strings, ``True``/``False``/``None``, lists, tuples, dicts, sets), names
from the datamodel and the system variables, attribute access on dicts (``_event.data.x``
reads the key ``x``), item access and slices, comparisons, ``and``/``or``/``not``, arithmetic,
``x if c else y``, and calls to a short list of pure functions (``In``, ``len``, ``str``,
``int``, ``float``, ``bool``, ``abs``, ``min``, ``max``, ``round``, ``sorted``, ``hasattr``,
``isinstance`` is not among them) and read-only methods of ``str``/``dict``/``list``.

Everything else — a dunder or ``_private`` attribute, a lambda, a comprehension, an
assignment, an import, a call to anything not on the list — is an :class:`ExpressionError`,
which the interpreter turns into the ``error.execution`` event. Sizes are bounded so a
hostile file cannot exhaust memory (``'a' * 10**12``, ``10 ** 10 ** 10``).

Example:
    >>> Expression("count + 1 if In('on') else 0").evaluate({"count": 2}, lambda s: True)
    3
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Expression", "ExpressionError", "Location", "is_location"]

MAX_SOURCE = 10_000
MAX_SIZE = 1_000_000  # longest str/list/tuple an expression may build
MAX_EXPONENT = 10_000


class ExpressionError(Exception):
    """An expression could not be parsed or evaluated (the interpreter raises error.execution).

    ``sendid`` is set when a ``<send>`` failed after its id was chosen (the error event
    carries it).
    """

    def __init__(self, message: str, *, sendid: str | None = None) -> None:
        super().__init__(message)
        self.sendid = sendid


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.Not: operator.not_,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        {"startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "split"}
        | {"find", "count", "replace", "isdigit", "isalpha", "join"}
    ),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
}


def _hasattr(value: Any, name: Any) -> bool:
    if isinstance(value, Mapping):
        return name in value
    return isinstance(name, str) and name in _METHODS.get(type(value), frozenset())


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "abs": abs,
    "min": min,
    "max": max,
    "round": round,
    "sorted": sorted,
    "hasattr": _hasattr,
}


_SPELLINGS: dict[str, Any] = {"true": True, "false": False, "null": None}


def _bounded(value: Any) -> Any:
    if isinstance(value, str | list | tuple | bytes) and len(value) > MAX_SIZE:
        raise ExpressionError(f"the value is longer than {MAX_SIZE} items")
    return value


class _Walker:
    """Evaluates one parsed expression over a namespace."""

    def __init__(self, names: Mapping[str, Any], in_state: Callable[[str], bool]) -> None:
        self.names = names
        self.in_state = in_state

    def eval(self, node: ast.AST) -> Any:
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:
            raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")
        return handler(node)

    def _Expression(self, node: ast.Expression) -> Any:
        return self.eval(node.body)

    def _Constant(self, node: ast.Constant) -> Any:
        if not isinstance(node.value, str | int | float | bool | type(None)):
            raise ExpressionError(f"the literal {node.value!r} is not allowed")
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in _SPELLINGS:  # the files' ECMAScript spellings of the constants
            return _SPELLINGS[node.id]
        raise ExpressionError(f"name {node.id!r} is not defined in the datamodel")

    def _Attribute(self, node: ast.Attribute) -> Any:
        value = self.eval(node.value)
        name = node.attr
        if isinstance(value, Mapping):
            if name in value:
                return value[name]
            if name in _METHODS[dict]:
                return getattr(value, name)
            raise ExpressionError(f"no key {name!r} to read as an attribute")
        if name.startswith("_") or name not in _METHODS.get(type(value), frozenset()):
            raise ExpressionError(f"attribute {name!r} of a {type(value).__name__} is not allowed")
        return getattr(value, name)

    def _Subscript(self, node: ast.Subscript) -> Any:
        value = self.eval(node.value)
        key = self.eval(node.slice)
        if not isinstance(value, Mapping | list | tuple | str):
            raise ExpressionError(f"a {type(value).__name__} cannot be indexed")
        try:
            return value[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise ExpressionError(f"item {key!r} cannot be read: {exc}") from None

    def _Slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def _BinOp(self, node: ast.BinOp) -> Any:
        fn = _BINARY.get(type(node.op))
        if fn is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        left, right = self.eval(node.left), self.eval(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, int | float) and right > MAX_EXPONENT:
            raise ExpressionError(f"exponent {right} is larger than {MAX_EXPONENT}")
        if isinstance(node.op, ast.Mult):
            for seq, count in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(count, int)
                    and len(seq) * count > MAX_SIZE
                ):
                    raise ExpressionError(f"the result would be longer than {MAX_SIZE}")
        try:
            return _bounded(fn(left, right))
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExpressionError(str(exc)) from None

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        fn = _UNARY.get(type(node.op))
        if fn is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        try:
            return fn(self.eval(node.operand))
        except TypeError as exc:
            raise ExpressionError(str(exc)) from None

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for value in node.values:
            result = self.eval(value)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.eval(comparator)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError as exc:
                raise ExpressionError(str(exc)) from None
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def _List(self, node: ast.List) -> Any:
        return _bounded([self.eval(e) for e in node.elts])

    def _Tuple(self, node: ast.Tuple) -> Any:
        return _bounded(tuple(self.eval(e) for e in node.elts))

    def _Set(self, node: ast.Set) -> Any:
        try:
            return {self.eval(e) for e in node.elts}
        except TypeError as exc:
            raise ExpressionError(str(exc)) from None

    def _Dict(self, node: ast.Dict) -> Any:
        if any(k is None for k in node.keys):
            raise ExpressionError("'**' in a dict literal is not allowed")
        try:
            return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
        except TypeError as exc:
            raise ExpressionError(str(exc)) from None

    def _Call(self, node: ast.Call) -> Any:
        if node.keywords:
            raise ExpressionError("keyword arguments are not allowed in a call")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError("'*' arguments are not allowed in a call")
        args = [self.eval(a) for a in node.args]
        if isinstance(node.func, ast.Name):
            if node.func.id == "In":
                if len(args) != 1 or not isinstance(args[0], str):
                    raise ExpressionError("In() takes one state id")
                return self.in_state(args[0])
            fn = _FUNCTIONS.get(node.func.id)
            if fn is None:
                raise ExpressionError(f"function {node.func.id!r} is not allowed")
        elif isinstance(node.func, ast.Attribute):
            fn = self._Attribute(node.func)
            if not callable(fn):
                raise ExpressionError(f"{node.func.attr!r} is not a method")
        else:
            raise ExpressionError("only named functions and methods can be called")
        try:
            return _bounded(fn(*args))
        except (TypeError, ValueError, KeyError, IndexError, ArithmeticError) as exc:
            raise ExpressionError(f"{type(exc).__name__}: {exc}") from None


class Expression:
    """One parsed expression; :meth:`evaluate` interprets it (never ``eval``).

    Raises:
        ExpressionError: the text is not a Python expression, or is too long.
    """

    __slots__ = ("_error", "_tree", "text")

    def __init__(self, text: str, *, lenient: bool = False) -> None:
        self.text = text
        self._error: str | None = None
        self._tree: ast.Expression | None = None
        try:
            if len(text) > MAX_SOURCE:
                raise ExpressionError(f"the expression is longer than {MAX_SOURCE} characters")
            try:
                self._tree = ast.parse(text.strip(), mode="eval")
            except (SyntaxError, ValueError) as exc:
                raise ExpressionError(f"{text!r} is not an expression: {exc}") from None
        except ExpressionError as exc:
            if not lenient:
                raise
            self._error = str(exc)  # a file's broken expression fails when evaluated

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def evaluate(self, names: Mapping[str, Any], in_state: Callable[[str], bool]) -> Any:
        """The value of the expression over ``names`` (``In(id)`` asks ``in_state``)."""
        if self._tree is None:
            raise ExpressionError(self._error or "broken expression")
        try:
            return _Walker(names, in_state).eval(self._tree)
        except RecursionError:
            raise ExpressionError("the expression is nested too deeply") from None


def is_location(text: str) -> bool:
    """True when ``text`` can be assigned to: a name, or a name followed by keys/attributes."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return False
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name)


class Location:
    """Where ``<assign>``, ``idlocation`` and ``<foreach item>`` write: ``x``, ``x['k']``, ``x.k``.

    Raises:
        ExpressionError: the text is not a name followed by keys and attributes.
    """

    __slots__ = ("_error", "_node", "root", "text")

    def __init__(self, text: str, *, lenient: bool = False) -> None:
        self.text = text
        self._error: str | None = None
        self.root = ""
        try:
            try:
                node = ast.parse(text.strip(), mode="eval").body
            except (SyntaxError, ValueError):
                raise ExpressionError(f"{text!r} is not a location") from None
            self._node: ast.expr | None = node
            while isinstance(node, ast.Attribute | ast.Subscript):
                node = node.value
            if not isinstance(node, ast.Name):
                raise ExpressionError(f"{text!r} is not a location (a name, keys, attributes)")
            self.root = node.id
        except ExpressionError as exc:
            if not lenient:
                raise
            self._node = None
            self._error = str(exc)  # a file's broken location fails when assigned

    def assign(self, names: dict[str, Any], value: Any, in_state: Callable[[str], bool]) -> None:
        """Write ``value`` at this location; the root name must already exist."""
        node = self._node
        if node is None:
            raise ExpressionError(self._error or "broken location")
        if isinstance(node, ast.Name):
            names[node.id] = value
            return
        assert isinstance(node, ast.Attribute | ast.Subscript)
        container = _Walker(names, in_state).eval(node.value)
        if isinstance(node, ast.Attribute):
            key: Any = node.attr
        else:
            key = _Walker(names, in_state).eval(node.slice)
        if isinstance(container, dict) or (isinstance(container, list) and isinstance(key, int)):
            try:
                container[key] = value
            except (IndexError, TypeError) as exc:
                raise ExpressionError(f"cannot assign to {self.text!r}: {exc}") from None
            return
        raise ExpressionError(f"cannot assign into a {type(container).__name__}")
