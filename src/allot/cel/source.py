"""Lexical analysis of selector expressions, for what the CEL runtime cannot do itself.

Kubernetes wraps ``device.attributes`` and ``device.capacity`` so that looking up a domain
the device does not publish yields an empty map instead of an error. The C++ runtime has
no such hook, so the compiler rewrites each *index* of those maps
(``device.attributes[...]``) to read an internal variable in which every domain named by
a string literal of the expression exists (empty where the device lacks it), while
``"x" in device.attributes``, ``size()`` and iteration keep reading the real map.

The same token stream gives a worst-case cost estimate for the validation cost limit,
since the runtime binding exposes no estimator. Called only by ``allot.cel.compiler``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from allot.cel import regex

# Order matters: longer alternatives first.
_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
        |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)

COMPREHENSION_MACROS = frozenset(
    {
        "all",
        "exists",
        "exists_one",
        "existsOne",
        "map",
        "filter",
        "transformList",
        "transformMap",
        "transformMapEntry",
        "sortBy",
    }
)
INDEXED_MAPS = ("attributes", "capacity")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


def tokenize(expression: str) -> list[Token]:
    """Split into tokens, dropping white space and comments; unknown characters end it.

    Tokenising never fails: the real parser reports syntax errors, this scanner only
    has to be right for expressions that compile.
    """
    tokens: list[Token] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            break
        kind = match.lastgroup or "op"
        if kind != "space":
            tokens.append(Token(kind, match.group(), match.start(), match.end()))
        position = match.end()
    return tokens


def scanned_whole(expression: str, tokens: list[Token]) -> bool:
    """Whether ``tokenize`` read the whole expression (it stops at what it cannot read)."""
    rest = expression[tokens[-1].end :].strip() if tokens else expression.strip()
    return not rest or rest.startswith("//")


def string_literal_value(token_text: str) -> str:
    """The value of a string token (escapes other than quotes and backslashes kept)."""
    text = token_text
    raw = False
    while text and text[0] in "rRbB":
        raw = raw or text[0] in "rR"
        text = text[1:]
    quote = text[:3] if text[:3] in ('"""', "'''") else text[:1]
    body = text[len(quote) : -len(quote)]
    if raw:
        return body
    return re.sub(r"\\(.)", r"\1", body)


def string_literals(tokens: list[Token]) -> frozenset[str]:
    return frozenset(string_literal_value(t.text) for t in tokens if t.kind == "string")


def rewrite_domain_indexing(
    expression: str, tokens: list[Token], replacement: dict[str, str]
) -> str:
    """Replace ``device.<map>`` by ``replacement[<map>]`` where it is indexed with ``[``."""
    pieces: list[str] = []
    last = 0
    for index in range(len(tokens) - 3):
        first, dot, name, bracket = tokens[index : index + 4]
        if not (
            first.text == "device"
            and dot.text == "."
            and name.text in replacement
            and bracket.text in ("[", "[?")
        ):
            continue
        if index > 0 and tokens[index - 1].text in (".", ".?"):
            continue
        pieces.append(expression[last : first.start])
        pieces.append(replacement[name.text])
        last = name.end
    pieces.append(expression[last:])
    return "".join(pieces)


REGEX_FUNCTIONS = ("matches", "find", "findAll")


def _calls(tokens: list[Token], names: tuple[str, ...]) -> list[int]:
    """Positions of the identifiers in ``names`` that are called (followed by ``(``)."""
    return [
        index
        for index in range(len(tokens) - 1)
        if tokens[index].kind == "ident"
        and tokens[index].text in names
        and tokens[index + 1].text == "("
    ]


def regex_literal_arguments(tokens: list[Token]) -> list[tuple[str, Token]]:
    """(function, literal) for each regex call whose first argument is a plain string
    literal: the pattern of a member call (``s.find('a+')``), the text of the global
    ``matches('x', p)`` (where cel-go's literal check looks too)."""
    found = []
    for index in _calls(tokens, REGEX_FUNCTIONS):
        member = index > 0 and tokens[index - 1].text == "."
        if not member and tokens[index].text != "matches":
            continue
        if index + 3 >= len(tokens):
            continue
        argument, after = tokens[index + 2], tokens[index + 3]
        bytes_literal = argument.text[:1] in "bB" or argument.text[:2].lower() in ("rb", "br")
        if argument.kind == "string" and not bytes_literal and after.text in (")", ","):
            found.append((tokens[index].text, argument))
    return found


def rename_calls(expression: str, tokens: list[Token], name: str, replacement: str) -> str:
    """``expression`` with every call of function ``name`` (member or global) renamed."""
    pieces: list[str] = []
    last = 0
    for index in _calls(tokens, (name,)):
        pieces.append(expression[last : tokens[index].start])
        pieces.append(replacement)
        last = tokens[index].end
    pieces.append(expression[last:])
    return "".join(pieces)


DeviceRead = tuple[str, ...]
"""One value an expression reads from ``device``: ``("driver",)``,
``("allowMultipleAllocations",)``, or ``(map, domain, name)`` for an attribute or capacity
entry."""

_DEVICE_FIELDS = ("driver", "allowMultipleAllocations")


def device_reads(expression: str, tokens: list[Token]) -> tuple[DeviceRead, ...] | None:
    """The single values an expression reads from ``device``, when that is all it reads.

    Recognised: ``device.driver``, ``device.allowMultipleAllocations`` and entries named by
    plain string literals (``device.attributes["d"].name``, ``device.capacity["d"]["name"]``).
    None when the expression reads more than such values: a whole map (``size()``, ``in``,
    iteration, an optional or computed key) or anything else, so the caller cannot tell
    what its result depends on. (``allot.lint.shapes`` groups raw devices by a coarser,
    name-based projection, before any view exists.)
    """
    if not scanned_whole(expression, tokens):
        return None  # the part not read could read anything
    reads: dict[DeviceRead, None] = {}
    for index, token in enumerate(tokens):
        if token.kind != "ident" or token.text != "device":
            continue
        if index > 0 and tokens[index - 1].text in (".", ".?"):
            continue  # a field that happens to be called ``device``
        read = _read_at(tokens, index + 1)
        if read is None:
            return None
        reads[read] = None
    return tuple(reads)


def _read_at(tokens: list[Token], position: int) -> DeviceRead | None:
    """The read that ``device`` followed by ``tokens[position:]`` makes, if recognised."""

    def text(offset: int) -> str:
        at = position + offset
        return tokens[at].text if at < len(tokens) else ""

    def literal(offset: int) -> str | None:
        at = position + offset
        if at >= len(tokens) or tokens[at].kind != "string" or "\\" in tokens[at].text:
            return None
        if tokens[at].text[0] in "bB" or tokens[at].text[:2].lower() in ("rb", "br"):
            return None  # a bytes literal indexes nothing in a map of strings
        return string_literal_value(tokens[at].text)

    if text(0) != "." or position + 1 >= len(tokens) or tokens[position + 1].kind != "ident":
        return None
    field = text(1)
    if field in _DEVICE_FIELDS:
        return (field,) if text(2) != "(" else None
    domain = literal(3)
    if field not in INDEXED_MAPS or text(2) != "[" or domain is None or text(4) != "]":
        return None
    if text(5) == "." and position + 6 < len(tokens) and tokens[position + 6].kind == "ident":
        return (field, domain, text(6)) if text(7) != "(" else None
    name = literal(6)
    if text(5) == "[" and name is not None and text(7) == "]":
        return (field, domain, name)
    return None


def estimate_cost(tokens: list[Token]) -> int:
    """A worst-case cost estimate in the spirit of cel-go's estimator.

    Each operator, call and variable access costs 1; the body of a comprehension costs
    its own tokens times the largest number of elements its range can have (the number
    of literal list elements, 32 for the attribute and capacity maps, 64 otherwise),
    multiplied through nesting.
    """
    cost, _ = _estimate_from(tokens, 0, len(tokens))
    return cost


def _estimate_from(tokens: list[Token], start: int, stop: int) -> tuple[int, int]:
    cost = 0
    index = start
    while index < stop:
        token = tokens[index]
        if _is_macro_call(tokens, index):
            close = _matching_close(tokens, index + 1)
            body_cost, _ = _estimate_from(tokens, index + 2, close)
            cost += 1 + body_cost * _range_bound(tokens, index)
            index = close + 1
            continue
        if token.kind in ("ident", "op") and token.text not in "()[]{},":
            cost += 1
        if token.kind == "ident" and token.text in REGEX_FUNCTIONS and _is_call(tokens, index):
            cost += _regex_call_estimate(tokens, index)
        index += 1
    return cost, index


MAX_STRING_SIZE = 64
"""The longest string the estimator assumes a device value to be (an attribute's)."""


def _is_call(tokens: list[Token], index: int) -> bool:
    return index + 1 < len(tokens) and tokens[index + 1].text == "("


def _regex_call_estimate(tokens: list[Token], index: int) -> int:
    """Kubernetes' estimate of a regex call: the text's traversal times a quarter of the
    pattern's length (a literal's own, else the longest string)."""
    pattern = MAX_STRING_SIZE
    member = index > 0 and tokens[index - 1].text == "."
    argument = tokens[index + 2] if index + 2 < len(tokens) else None
    if member and argument is not None and argument.kind == "string":
        pattern = len(string_literal_value(argument.text))
    return regex.call_cost(MAX_STRING_SIZE, pattern)


def _is_macro_call(tokens: list[Token], index: int) -> bool:
    return (
        tokens[index].text in COMPREHENSION_MACROS
        and index > 0
        and tokens[index - 1].text == "."
        and index + 1 < len(tokens)
        and tokens[index + 1].text == "("
    )


def _matching_close(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(tokens)):
        text = tokens[index].text
        if text in ("(", "[", "[?", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def _range_bound(tokens: list[Token], macro_index: int) -> int:
    """How many elements the receiver of the macro at ``macro_index`` can have."""
    receiver_end = macro_index - 2  # token before the '.'
    if receiver_end < 0:
        return 64
    if tokens[receiver_end].text == "]":
        depth, index = 0, receiver_end
        while index >= 0:
            if tokens[index].text == "]":
                depth += 1
            elif tokens[index].text in ("[", "[?"):
                depth -= 1
                if depth == 0:
                    break
            index -= 1
        is_literal_list = index == 0 or (
            tokens[index - 1].kind == "op" and tokens[index - 1].text not in (")", "]")
        )
        if is_literal_list:
            elements = sum(1 for t in tokens[index + 1 : receiver_end] if t.text == ",")
            return elements + 1 if receiver_end > index + 1 else 0
        return 32 if _mentions_device_map(tokens[max(0, index - 3) : index]) else 64
    if tokens[receiver_end].text in INDEXED_MAPS:
        return 32
    return 64


def _mentions_device_map(tokens: list[Token]) -> bool:
    return any(t.text in INDEXED_MAPS for t in tokens)
