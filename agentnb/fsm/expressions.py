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
which the interpreter turns into the ``error.execution`` event.

Bounds, checked *before* an operation runs, from the sizes of its operands, so a hostile
file cannot exhaust memory or time (``'a' * 10**12``, ``[[0] * 10**6] * 10**6``,
``((2**10000)**10000)**10000``, ``str([x] * 1000)`` of a shared ``x``):

* a value's *size* is what writing it out costs: a string's length, an int's digits (1 up to
  64 bits), 1 for another scalar, 1 plus its items' sizes for a container (a dict's keys and
  values) — an item counted each time it appears, as ``repr`` and JSON write it, so
  references to one list shared a million times count a million times. No value an
  expression builds (repetition, concatenation, literals, ``str()``, ``%``-formatting,
  ``join``, ``replace``, ``split``, ``sorted``...) may be larger than :data:`MAX_SIZE`;
* an int has at most :data:`MAX_INT_DIGITS` digits (what Python writes out), checked on the
  operands' bit lengths before ``*``, ``**``, ``int()`` run;
* one evaluation has :data:`MAX_STEPS` steps: a node costs one, an operation what it touches
  (the items it copies, compares or builds), so a long chain of big operations stops too;
* an ``<assign>`` into a key or item keeps the variable within :data:`MAX_SIZE` and never
  makes a value contain itself.

A breach is an :class:`ExpressionError` naming the limit: the instance raises
``error.execution`` and keeps working.

Example:
    >>> Expression("count + 1 if In('on') else 0").evaluate({"count": 2}, lambda s: True)
    3
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Collection, ItemsView, KeysView, Mapping, ValuesView
from typing import Any

__all__ = ["Expression", "ExpressionError", "Location", "is_location"]

MAX_SOURCE = 10_000
MAX_SIZE = 1_000_000  # the largest value (see the module docstring) an expression may build
MAX_INT_DIGITS = 4_300  # Python's own limit for writing an int out (sys.int_info)
MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10))  # 2**MAX_INT_BITS has MAX_INT_DIGITS digits
MAX_STEPS = 10 * MAX_SIZE  # one evaluation's budget: nodes plus the items operations touch
_OVER = MAX_SIZE + 1  # a measured size past the limit (measuring stops there)


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


_MEASURED = (list, tuple, dict, set, frozenset, KeysView, ValuesView, ItemsView)


def _int_digits(value: int) -> int:
    """At least the characters of ``str(value)`` (its digits and a sign): 1233/4096 > log10 2."""
    return (value.bit_length() * 1233 >> 12) + 2


def _size(value: Any, memo: dict[int, tuple[Any, int]], active: set[int]) -> int:
    """The size of ``value`` (module docstring), or :data:`_OVER` once it passes MAX_SIZE."""
    kind = type(value)
    if kind is str or kind is bytes:
        return max(1, len(value))
    if kind is int:
        return 1 if value.bit_length() <= 64 else _int_digits(value)
    if not isinstance(value, _MEASURED):
        return 1 if kind in (float, bool, type(None)) else 4
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    total = _walk(value, memo, active, _size, 1, 0)
    memo[id(value)] = (value, total)  # the value is kept: its id is not reused meanwhile
    return total


def _text(value: Any, memo: dict[int, tuple[Any, int]], active: set[int]) -> int:
    """At least ``len(repr(value))`` (and ``len(str(value))``), or :data:`_OVER` past MAX_SIZE."""
    kind = type(value)
    if kind is str:
        if value.isprintable():  # quotes, and an escape per backslash or quote at most
            return len(value) + 2 + int(value.count("\\") + value.count("'"))
        return 10 * len(value) + 2  # '\U0001f600'-like escapes are the longest
    if kind is int:
        return _int_digits(value)
    if kind is float:
        return 24  # '-2.2250738585072014e-308'
    if not isinstance(value, _MEASURED):
        return 5 if kind in (bool, type(None)) else 100  # a method's or complex's repr
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    # 'dict_items([' and '])' around; ', ' or ': ' and a tuple's '(' ')' per item at most
    total = _walk(value, memo, active, _text, 14, 4)
    memo[id(value)] = (value, total)
    return total


def _walk(
    value: Any,
    memo: dict[int, tuple[Any, int]],
    active: set[int],
    measure: Callable[[Any, dict[int, tuple[Any, int]], set[int]], int],
    total: int,
    per_item: int,
) -> int:
    key = id(value)
    if key in active:
        raise ExpressionError("the value contains itself (it could never be written out)")
    if isinstance(value, ItemsView):
        value = value.mapping  # type: ignore[attr-defined]  # the dict behind it (3.10+)
    parts = (value.keys(), value.values()) if isinstance(value, Mapping) else (value,)
    active.add(key)
    try:
        for part in parts:
            flat = _flat(part, text=measure is _text)
            if flat is not None:
                total += flat
            else:
                for item in part:
                    total += measure(item, memo, active) + per_item
                    if total > MAX_SIZE:
                        return _OVER
            if total > MAX_SIZE:
                return _OVER
        return total
    finally:
        active.discard(key)


_FLAT = frozenset({float, bool, type(None)})


def _flat(items: Collection[Any], *, text: bool) -> int | None:
    """The measure of items that are all numbers or all strings, at C speed, item overhead
    included (``None``: measure them one by one). A million-item list takes ~20 ms, not ~1 s.
    """
    if not items:
        return 0
    kinds = set(map(type, items))
    if kinds <= _FLAT:
        return len(items) * (28 if text else 1)  # a float's 24 characters and ', '
    if kinds <= {int, bool}:
        widest: int = max(map(abs, items)).bit_length()
        if text:
            return len(items) * ((widest * 1233 >> 12) + 6)
        return len(items) if widest <= 64 else None
    if kinds == {str}:
        chars = sum(map(len, items))
        if text:  # escapes: 2 characters at most for printable ones, 10 for the others
            return chars * (2 if all(map(str.isprintable, items)) else 10) + 6 * len(items)
        return chars + len(items) - sum(map(bool, items))  # an empty string counts 1
    return None


def _too_big(what: str, size: int) -> ExpressionError:
    shown = f"more than {MAX_SIZE}" if size > MAX_SIZE else str(size)
    return ExpressionError(
        f"{what} would have a size of {shown}, over the limit MAX_SIZE={MAX_SIZE} "
        "(a string's length, a container's items counted each time they appear)"
    )


def _too_long_int(bits: float) -> ExpressionError:
    return ExpressionError(
        f"the int would have about {int(bits * 0.30103) + 1} digits, over the limit "
        f"MAX_INT_DIGITS={MAX_INT_DIGITS}"
    )


# one %-conversion: (key) flags width .precision length-modifier type (CPython's grammar)
_CONVERSION = re.compile(
    r"%(?:\((?P<key>[^()]*)\))?[-+ #0]*(?P<width>\*|\d*)(?:\.(?P<prec>\*|\d*))?[hlL]?"
)
_NUMERIC = frozenset("diouxXeEfFgG")
_SEQUENCES = (str, bytes, list, tuple)
_NUMBERS = (int, bool, float)


class _Walker:
    """Evaluates one parsed expression over a namespace, within one budget of steps."""

    def __init__(self, names: Mapping[str, Any], in_state: Callable[[str], bool]) -> None:
        self.names = names
        self.in_state = in_state
        self.steps = 0
        self._sizes: dict[int, tuple[Any, int]] = {}
        self._texts: dict[int, tuple[Any, int]] = {}

    # -- the budget and the measures -----------------------------------------------------

    def charge(self, steps: int) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise ExpressionError(
                f"the expression needs more than MAX_STEPS={MAX_STEPS} steps "
                "(nodes, and the items its operations copy, compare or build)"
            )

    def size(self, value: Any) -> int:
        return _size(value, self._sizes, set())

    def text(self, value: Any) -> int:
        return _text(value, self._texts, set())

    def admit(self, what: str, size: int) -> int:
        """Refuse a value of ``size`` before it is built; charge building it."""
        if size > MAX_SIZE:
            raise _too_big(what, size)
        self.charge(size)
        return size

    def built(self, value: Any, size: int) -> Any:
        """Remember the size of a container just built, so no later check walks it again."""
        self._sizes[id(value)] = (value, size)
        return value

    # -- nodes ---------------------------------------------------------------------------

    def eval(self, node: ast.AST) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.charge(0)
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
        return _attribute(self.eval(node.value), node.attr)

    def _Subscript(self, node: ast.Subscript) -> Any:
        value = self.eval(node.value)
        key = self.eval(node.slice)
        if not isinstance(value, Mapping | list | tuple | str):
            raise ExpressionError(f"a {type(value).__name__} cannot be indexed")
        try:
            if isinstance(key, slice) and not isinstance(value, Mapping):
                self.charge(len(range(*key.indices(len(value)))))  # the slice is a copy
            else:
                self.charge(self.size(key))  # hashing it
            return value[key]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ExpressionError(f"item {key!r} cannot be read: {exc}") from None

    def _Slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def _BinOp(self, node: ast.BinOp) -> Any:
        fn = _BINARY.get(type(node.op))
        if fn is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        left, right = self.eval(node.left), self.eval(node.right)
        size = self._admit_binary(type(node.op), left, right)
        try:
            result = fn(left, right)
        except (TypeError, ValueError, KeyError, ArithmeticError) as exc:
            raise ExpressionError(str(exc)) from None
        return result if size is None else self.built(result, size)

    def _admit_binary(self, op: type[ast.operator], left: Any, right: Any) -> int | None:
        """Check ``left op right`` before it runs; the result's size when it is a container."""
        if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
            if isinstance(left, float) or isinstance(right, float):
                self.charge(1)  # a float result: constant time, or OverflowError
                return None
            a, b = left.bit_length(), right.bit_length()
            bits: float = max(a, b) + 1 if op in (ast.Add, ast.Sub) else max(a, b)
            if op is ast.Mult:
                bits = a + b
            elif op is ast.Pow and right > 0 and abs(left) > 1:
                bits = right * math.log2(abs(left)) if b <= 64 else math.inf
            if bits > MAX_INT_BITS:
                raise _too_long_int(bits)
            self.charge(1 + a * b // 4096)  # the schoolbook cost in 64-bit words
            return None
        if op is ast.Mult:
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, _SEQUENCES) and isinstance(count, int):
                    return self._admit_repeat(seq, count)
        elif op is ast.Add:
            if isinstance(left, str | bytes) and type(left) is type(right):
                self.admit("the concatenation", len(left) + len(right))
                return None
            if isinstance(left, list | tuple) and type(left) is type(right):
                size = self.size(left) + self.size(right) - 1
                self.admit("the concatenation", size)
                return size
        elif op is ast.Mod and isinstance(left, str):
            self.admit("the formatted string", self._format_length(left, right))
            return None
        elif op is ast.Mod and isinstance(left, bytes):
            raise ExpressionError("bytes formatting is not allowed")
        if isinstance(left, set | frozenset) and isinstance(right, set | frozenset):
            self.charge(len(left) + len(right))
        else:
            self.charge(1)
        return None

    def _admit_repeat(self, seq: Any, count: int) -> int | None:
        if count <= 0 or not seq:
            self.charge(1)
            return None if isinstance(seq, str | bytes) else 1
        if count.bit_length() > 64:
            raise _too_big("the repetition", _OVER)
        if isinstance(seq, str | bytes):
            self.admit("the repetition", len(seq) * count)
            return None
        size = 1 + (self.size(seq) - 1) * count
        self.admit("the repetition", size)
        return size

    def _format_length(self, fmt: str, args: Any) -> int:
        """At least ``len(fmt % args)``, computed from the conversions and the arguments."""
        mapping = args if isinstance(args, Mapping) else None
        queue = list(args) if isinstance(args, tuple) else [args]
        position = 0
        total = len(fmt)

        def next_arg() -> Any:
            if not queue:
                raise ExpressionError("not enough arguments for format string")
            return queue.pop(0)

        def number(spec: str | None) -> int:
            if spec == "*":
                value = next_arg()
                if not isinstance(value, int):
                    raise ExpressionError("* wants int")
                return abs(value) if abs(value) <= MAX_SIZE else _OVER
            if not spec:
                return 0
            return int(spec) if len(spec) <= 7 else _OVER

        while (start := fmt.find("%", position)) >= 0:
            found = _CONVERSION.match(fmt, start)
            assert found is not None  # every part of the pattern is optional
            position = found.end() + 1
            if found.end() >= len(fmt):
                raise ExpressionError("incomplete format")
            kind = fmt[found.end()]
            if kind not in "diouxXeEfFgGcrsa%":
                raise ExpressionError(f"unsupported format character {kind!r}")
            width, precision = number(found["width"]), number(found["prec"])
            if kind == "%":
                total += width + 1
                continue
            if found["key"] is not None:
                if mapping is None:
                    raise ExpressionError("format requires a mapping")
                try:
                    arg = mapping[found["key"]]
                except KeyError:
                    raise ExpressionError(f"no key {found['key']!r} for the format") from None
            else:
                arg = next_arg()
            if kind == "s" and isinstance(arg, str):
                length = len(arg)
            elif kind in "sr":
                length = self.text(arg)
            elif kind == "a":
                length = 10 * self.text(arg)  # ascii() escapes a character in 10 at most
            elif kind == "c":
                length = 1
            elif kind in "eEfFgG":
                length = 320 + precision  # '%f' % 1e308: 309 digits
                precision = 0
            elif isinstance(arg, int):  # d i o u x X: octal has the most digits
                length = arg.bit_length() // 3 + 4
            else:
                length = 320  # a float as %d: 309 digits (other types raise)
            total += max(width, max(length, precision) + 4)
            if total > MAX_SIZE:
                return _OVER
        return total

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
            self.charge(self._compare_cost(type(op), left, right))
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError as exc:
                raise ExpressionError(str(exc)) from None
            left = right
        return True

    def _compare_cost(self, op: type[ast.cmpop], left: Any, right: Any) -> int:
        """At most the items a comparison touches (it stops at the smaller operand)."""
        if op is ast.In or op is ast.NotIn:
            if isinstance(right, str | bytes):
                return len(right) + (len(left) if isinstance(left, str | bytes) else 1)
            if isinstance(right, Mapping | set | frozenset | KeysView):
                return self.size(left)  # hashed, then compared once
            return self.size(right) if isinstance(right, _MEASURED) else 1
        if op is ast.Is or op is ast.IsNot or type(left) is not type(right):
            return 1
        if isinstance(left, str | bytes):
            return min(len(left), len(right)) + 1
        if isinstance(left, _MEASURED):
            return min(self.size(left), self.size(right))
        return 1

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def _elements(self, nodes: list[ast.expr]) -> tuple[list[Any], int]:
        values = [self.eval(e) for e in nodes]
        size = 1 + sum(self.size(v) for v in values)
        self.admit(f"the {len(values)}-item literal", size)
        return values, size

    def _List(self, node: ast.List) -> Any:
        values, size = self._elements(node.elts)
        return self.built(values, size)

    def _Tuple(self, node: ast.Tuple) -> Any:
        values, size = self._elements(node.elts)
        return self.built(tuple(values), size)

    def _Set(self, node: ast.Set) -> Any:
        values, size = self._elements(node.elts)
        try:
            return self.built(set(values), size)
        except TypeError as exc:
            raise ExpressionError(str(exc)) from None

    def _Dict(self, node: ast.Dict) -> Any:
        if any(k is None for k in node.keys):
            raise ExpressionError("'**' in a dict literal is not allowed")
        keys, values = node.keys, node.values
        items, size = self._elements([*keys, *values])  # type: ignore[list-item]
        try:
            return self.built(dict(zip(items[: len(keys)], items[len(keys) :], strict=True)), size)
        except TypeError as exc:
            raise ExpressionError(str(exc)) from None

    def _Call(self, node: ast.Call) -> Any:
        if node.keywords:
            raise ExpressionError("keyword arguments are not allowed in a call")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError("'*' arguments are not allowed in a call")
        if isinstance(node.func, ast.Name):
            args = [self.eval(a) for a in node.args]
            name = node.func.id
            if name == "In":
                if len(args) != 1 or not isinstance(args[0], str):
                    raise ExpressionError("In() takes one state id")
                return self.in_state(args[0])
            fn = _FUNCTIONS.get(name)
            if fn is None:
                raise ExpressionError(f"function {name!r} is not allowed")
            size = self._admit_function(name, args)
        elif isinstance(node.func, ast.Attribute):
            receiver = self.eval(node.func.value)
            name = node.func.attr
            fn = _attribute(receiver, name)
            if not callable(fn):
                raise ExpressionError(f"{name!r} is not a method")
            args = [self.eval(a) for a in node.args]
            size = self._admit_method(receiver, name, args)
        else:
            raise ExpressionError("only named functions and methods can be called")
        try:
            result = fn(*args)
        except (TypeError, ValueError, KeyError, IndexError, ArithmeticError) as exc:
            raise ExpressionError(f"{type(exc).__name__}: {exc}") from None
        return result if size is None else self.built(result, size)

    def _admit_function(self, name: str, args: list[Any]) -> int | None:
        """Check a call of an allowed function before it runs; a built list's size."""
        first = args[0] if args else None
        if name == "str" and len(args) == 1 and not isinstance(first, str):
            self.admit("str()", self.text(first))
        elif name == "int" and isinstance(first, str | bytes):
            base = args[1] if len(args) > 1 else 10
            per_digit = math.log2(base) if isinstance(base, int) and 2 <= base <= 36 else 4
            bits = len(first.strip()) * per_digit
            if bits > MAX_INT_BITS + per_digit:
                raise _too_long_int(bits)
            self.charge(len(first))
        elif name == "round" and len(args) == 2 and isinstance(first, int):
            if isinstance(args[1], int) and args[1] < -MAX_INT_DIGITS:
                raise ExpressionError(
                    f"round() to more than MAX_INT_DIGITS={MAX_INT_DIGITS} digits"
                )
        elif name in ("min", "max"):
            self.charge(sum(self.size(a) for a in args))
        elif name == "sorted" and isinstance(first, (*_MEASURED, str)):
            size = self.admit("sorted()", self.size(first) + 1)
            self.charge(size * (len(first) + 1).bit_length())  # n log n comparisons
            return size
        elif isinstance(first, str | bytes):
            self.charge(len(first))  # float(), len()...
        self.charge(1)
        return None

    def _admit_method(self, receiver: Any, name: str, args: list[Any]) -> int | None:
        """Check a call of an allowed method before it runs; a built list's size."""
        if isinstance(receiver, str):
            self.charge(len(receiver) + sum(len(a) for a in args if isinstance(a, str)))
            if name in ("lower", "upper"):  # 'ß'.upper() == 'SS'; no case maps to more than 3
                self.admit(f"{name}()", len(receiver) * (1 if receiver.isascii() else 3))
            elif name == "replace":
                self._admit_replace(receiver, args)
            elif name == "split":
                return self._admit_split(receiver, args)
            elif name == "join" and args:
                self.admit("join()", self._join_length(receiver, args[0]))
        elif name in ("count", "index"):  # list, tuple: compares each item
            self.charge(self.size(receiver) + (self.size(args[0]) if args else 0))
        elif name == "get" and args:
            self.charge(self.size(args[0]))
        self.charge(1)
        return None

    def _admit_replace(self, text: str, args: list[Any]) -> None:
        if len(args) not in (2, 3) or not all(isinstance(a, str) for a in args[:2]):
            return  # str.replace raises TypeError
        old, new = args[0], args[1]
        times = text.count(old)  # '' occurs len(text) + 1 times, as replace() inserts it
        if len(args) == 3 and isinstance(args[2], int) and args[2] >= 0:
            times = min(times, args[2])
        self.admit("replace()", len(text) + times * (len(new) - len(old)))

    def _admit_split(self, text: str, args: list[Any]) -> int | None:
        sep = args[0] if args else None
        limit = args[1] if len(args) > 1 else -1
        if not isinstance(sep, str | None) or not isinstance(limit, int) or sep == "":
            return None  # str.split raises TypeError or ValueError
        pieces = (len(text) + 1) // 2 + 1 if sep is None else text.count(sep) + 1
        if limit >= 0:
            pieces = min(pieces, limit + 1)
        return self.admit("split()", 1 + len(text) + pieces)

    def _join_length(self, sep: str, items: Any) -> int:
        if isinstance(items, str):
            return len(items) + len(sep) * max(0, len(items) - 1)
        if not isinstance(items, list | tuple | set | frozenset | Mapping | KeysView | ValuesView):
            raise ExpressionError(f"join() takes a list of strings, not a {type(items).__name__}")
        self.charge(len(items))
        total = len(sep) * max(0, len(items) - 1)
        for number, item in enumerate(items):
            if not isinstance(item, str):
                raise ExpressionError(
                    f"join(): item {number} is a {type(item).__name__}, not a str"
                )
            total += len(item)
            if total > MAX_SIZE:
                return _OVER
        return total


def _attribute(value: Any, name: str) -> Any:
    """``value.name``: a dict's key, or an allowed read-only method."""
    if isinstance(value, Mapping):
        if name in value:
            return value[name]
        if name in _METHODS[dict]:
            return getattr(value, name)
        raise ExpressionError(f"no key {name!r} to read as an attribute")
    if name.startswith("_") or name not in _METHODS.get(type(value), frozenset()):
        raise ExpressionError(f"attribute {name!r} of a {type(value).__name__} is not allowed")
    return getattr(value, name)


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
                before = (
                    container.get(key, _ABSENT) if isinstance(container, dict) else container[key]
                )
                container[key] = value
            except (IndexError, TypeError) as exc:
                raise ExpressionError(f"cannot assign to {self.text!r}: {exc}") from None
            try:
                # The variable as a whole stays writable: within MAX_SIZE (a value aliased under
                # many keys counts each time) and not containing itself.
                size = _size(names[self.root], {}, set())
                if size > MAX_SIZE:
                    raise _too_big(f"{self.root!r} after the assignment", size)
            except (ExpressionError, RecursionError) as exc:
                if before is _ABSENT:
                    del container[key]
                else:
                    container[key] = before
                if isinstance(exc, RecursionError):
                    raise ExpressionError(f"{self.root!r} would be nested too deeply") from None
                raise ExpressionError(f"cannot assign to {self.text!r}: {exc}") from None
            return
        raise ExpressionError(f"cannot assign into a {type(container).__name__}")


_ABSENT = object()
