"""Compiling and evaluating DRA selectors as Kubernetes 1.36 does.

Mirrors ``k8s.io/dynamic-resource-allocation/cel``: an expression is type-checked against
the ``device`` variable (``driver``, ``attributes``, ``capacity``,
``allowMultipleAllocations``) and must yield ``bool`` or the unknown type; compile errors
read ``compilation failed: ERROR: <input>:1:20: ...``; new expressions must stay under the
length and estimated-cost limits. Compiled selectors are cached by expression text, and
each :class:`~allot.cel.device.DeviceView` remembers its results; a selector that reads only
single values of ``device`` also remembers its result per set of values read, so the eight
GPUs of one model run it once.

Used by validation (compile only), lint and the allocator (compile and evaluate).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from allot.cel import cost, libraries, regex, source, values
from allot.cel.device import DeviceView
from allot.cel.errors import CompileError, CompileErrorReason, EvaluationError

CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
MAX_SHARED_RESULTS = 65_536
"""Results kept per expression for sets of read values (dropped together when full)."""

T = cel.Type
_INDEXED_NAMES = {"attributes": "device.indexedAttributes", "capacity": "device.indexedCapacity"}
_PRIMITIVE_TYPE_NAMES = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "TYPE": "type",
    "LIST": "list",
    "MAP": "map",
    "DYN": "dyn",
    "ANY": "any",
}
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
ITERATION_BUDGET_EXCEEDED = "Iteration budget exceeded"
"""What cel-cpp raises when comprehensions iterate past its budget."""
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_UNDECLARED_FIELD = re.compile(
    r"undeclared reference to 'device\.([A-Za-z_][A-Za-z0-9_]*)' "
    r"\(in container ''\)"
)
_MISSING_KEY = re.compile(r'Key not found in map : "(.*)"')


def _variables(*, with_internal: bool) -> dict[str, Any]:
    """The ``device`` fields; attribute values are dynamic (scalars, or lists with the gate)."""
    value_type = T.DYN
    attributes = T.Map(T.STRING, T.Map(T.STRING, value_type))
    capacity = T.Map(T.STRING, T.Map(T.STRING, libraries.QUANTITY))
    variables = {
        "device.driver": T.STRING,
        "device.attributes": attributes,
        "device.capacity": capacity,
        "device.allowMultipleAllocations": T.BOOL,
    }
    if with_internal:
        variables[_INDEXED_NAMES["attributes"]] = attributes
        variables[_INDEXED_NAMES["capacity"]] = capacity
    return variables


def new_env(
    variables: dict[str, Any], descriptor_pool: Any = None, functions: Sequence[Any] = ()
) -> Any:
    """A runtime environment with Kubernetes' libraries, ``functions`` besides, and these
    variables (their message types from ``descriptor_pool``: allot's own pool unless a
    caller brings typed ones)."""
    return cel.NewEnv(
        descriptor_pool=values.POOL if descriptor_pool is None else descriptor_pool,
        variables=variables,
        functions=[*libraries.function_declarations(), *functions],
        extensions=[
            ext_bindings.ExtBindings(),
            ext_strings.ExtStrings(),
            ext_optional.ExtOptional(),
        ],
    )


def evaluate_metered(program: Any, activation: Any, limit: int) -> Any:
    """Run ``program`` within a cost budget of ``limit``; raise EvaluationError when the
    runtime aborts or the budget runs out (whatever value the expression made of that)."""
    with cost.metered(limit) as budget:
        try:
            result = program.eval(activation)
        except RuntimeError as err:  # aborted by the runtime (its iteration budget)
            raise runtime_failure(err) from None
    if budget.exceeded:
        raise EvaluationError(cost.COST_LIMIT_EXCEEDED)
    return result


def runnable(expression: str, tokens: list[source.Token]) -> str:
    """The text the runtime runs: ``matches`` calls renamed to allot's RE2 ``matches``."""
    return source.rename_calls(expression, tokens, "matches", libraries.MATCHES_FUNCTION)


def invalid_matches_literals(expression: str, tokens: list[source.Token]) -> CompileError | None:
    """cel-go's regex-literal validator: a literal ``matches`` argument Go's regexp refuses
    fails compilation with ``invalid matches argument`` at the literal."""
    issues = [
        located_issue(expression, token.start, "invalid matches argument")
        for function, token in source.regex_literal_arguments(tokens)
        if function == "matches" and _refused_pattern(token.text)
    ]
    return CompileError("compilation failed: " + "\n".join(issues)) if issues else None


def program_regex_error(tokens: list[source.Token]) -> CompileError | None:
    """The regex optimisation of ``find`` and ``findAll``: a literal pattern Go's regexp
    refuses fails program instantiation (an internal error to Kubernetes' validation)."""
    for function, token in source.regex_literal_arguments(tokens):
        refused = _refused_pattern(token.text) if function != "matches" else ""
        if refused:
            return CompileError(
                f"program instantiation failed: {refused}", CompileErrorReason.INTERNAL
            )
    return None


def _refused_pattern(literal: str) -> str:
    """Go's error text for the pattern a string literal token spells ("" when valid)."""
    value = _literal_env().compile(literal).eval().value()
    try:
        regex.compile_pattern(str(value))
    except regex.RegexError as err:
        return str(err)
    return ""


_LITERALS: list[Any] = []


def _literal_env() -> Any:
    """A bare environment, to read string literals exactly as the runtime does."""
    if not _LITERALS:
        _LITERALS.append(cel.NewEnv())
    return _LITERALS[0]


def located_issue(expression: str, offset: int, message: str) -> str:
    """An issue in cel-go's display form: ``ERROR: <input>:1:5: message``, the line and a
    caret under the offending column."""
    line_start = expression.rfind("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    snippet = expression[line_start : line_end if line_end >= 0 else len(expression)]
    line = expression.count("\n", 0, offset) + 1
    column = offset - line_start
    return (
        f"ERROR: <input>:{line}:{column + 1}: {message}\n"
        f" | {snippet.replace(chr(9), ' ')}\n | {'.' * column}^"
    )


def runtime_failure(err: RuntimeError) -> EvaluationError:
    """An evaluation the C++ runtime aborted instead of returning an error value: past its
    comprehension iteration budget (reported with cel-go's text for its cost limit, as
    Kubernetes reports an expression that runs out of budget), or another failure."""
    text = str(err)
    if ITERATION_BUDGET_EXCEEDED in text:
        return EvaluationError("operation cancelled: actual cost limit exceeded")
    return EvaluationError(clean_runtime_message(text))


def clean_runtime_message(text: str) -> str:
    """Turn the C++ runtime's status text into cel-go's wording where they differ."""
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text))
    missing = _MISSING_KEY.search(text)
    if missing:
        return f"no such key: {missing.group(1)}"
    return text


def _clean_compile_message(text: str) -> str:
    lines = [_STATUS_SUFFIX.sub("", line) for line in text.splitlines()]
    if lines:
        lines[0] = _STATUS_PREFIX.sub("", lines[0])
    cleaned = "\n".join(lines)
    return _UNDECLARED_FIELD.sub(r"undefined field '\1'", cleaned)


def type_display_name(cel_type: Any) -> str:
    """cel-go's name for a type (``int``, ``kubernetes.Quantity``, ``list(dyn)``)."""
    name = str(cel_type.name())
    return _PRIMITIVE_TYPE_NAMES.get(name, name)


@dataclass
class CompiledSelector:
    """A checked selector, ready to evaluate on devices."""

    expression: str
    program: Any
    estimated_cost: int
    compiler: SelectorCompiler = field(repr=False)
    reads: tuple[source.DeviceRead, ...] | None = None
    """The single values the expression reads from ``device`` (None: it reads more)."""
    _by_inputs: dict[tuple[Hashable, ...], bool | EvaluationError] = field(
        default_factory=dict, repr=False, compare=False
    )

    def matches(self, device: DeviceView) -> bool:
        """Evaluate on ``device``; raise EvaluationError as Kubernetes would fail.

        An expression that reads only single values (``reads``) gives every device with the
        same values the same result, so it runs once per distinct set of them: the GPUs of
        one model share ``productName`` and memory but not ``uuid``.
        """
        cached = device.results.get(self.expression)
        if cached is None:
            key = device.inputs(self.reads) if self.reads is not None else None
            cached = self._by_inputs.get(key) if key is not None else None
            if cached is None:
                cached = self._evaluate(device)
                if key is not None:
                    if len(self._by_inputs) >= MAX_SHARED_RESULTS:
                        self._by_inputs.clear()
                    self._by_inputs[key] = cached
            device.results[self.expression] = cached
        if isinstance(cached, EvaluationError):
            raise cached
        return cached

    def _evaluate(self, device: DeviceView) -> bool | EvaluationError:
        try:
            activation = device.activation(self.compiler)
        except EvaluationError as err:
            return err
        try:
            result = evaluate_metered(self.program, activation, CEL_SELECTOR_EXPRESSION_MAX_COST)
        except EvaluationError as err:
            return err
        type_name = str(result.type().name())
        if type_name == "BOOL":
            return bool(result.value())
        if type_name == "ERROR":
            return EvaluationError(clean_runtime_message(str(result.value())))
        shown = _PRIMITIVE_TYPE_NAMES.get(type_name, type_name)
        return EvaluationError(
            f"CEL result of type {shown} could not be converted to bool: "
            f"type conversion error from '{shown}' to 'bool'"
        )


class SelectorCompiler:
    """Compiles selectors once per expression text; thread-compatible, not thread-safe."""

    def __init__(self, *, list_type_attributes: bool = False) -> None:
        self.list_type_attributes = list_type_attributes
        self._check_env = new_env(_variables(with_internal=False))
        self._run_env = new_env(_variables(with_internal=True))
        self._cache: dict[str, CompiledSelector | CompileError] = {}
        self._domain_literals: set[str] = set()
        self.literal_version = 0

    def compile(self, expression: str, *, stored: bool = False) -> CompiledSelector:
        """Compile ``expression``; ``stored`` skips the limits as for stored objects."""
        if not stored:
            self.check_limits(expression)
        cached = self._cache.get(expression)
        if cached is None:
            cached = self._compile_uncached(expression)
            self._cache[expression] = cached
        if isinstance(cached, CompileError):
            raise cached
        return cached

    def check_limits(self, expression: str) -> None:
        """The validation-only limits: length, then (after compiling) the estimated cost."""
        if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
            raise CompileError(
                f"may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes",
                CompileErrorReason.TOO_LONG,
            )
        compiled = self.compile(expression, stored=True)
        if compiled.estimated_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
            raise CompileError("too complex, exceeds cost limit", CompileErrorReason.FORBIDDEN)

    def _compile_uncached(self, expression: str) -> CompiledSelector | CompileError:
        try:
            checked = self._check_env.compile(expression)
        except RuntimeError as err:
            return CompileError("compilation failed: " + _clean_compile_message(str(err)))
        tokens = source.tokenize(expression)
        invalid = invalid_matches_literals(expression, tokens)
        if invalid is not None:
            return invalid
        result_type = type_display_name(checked.return_type())
        if result_type not in ("bool", "dyn"):
            return CompileError(f"must evaluate to bool or the unknown type, not {result_type}")
        refused = program_regex_error(tokens)
        if refused is not None:
            return refused
        rewritten = source.rewrite_domain_indexing(expression, tokens, _INDEXED_NAMES)
        program = self._run_env.compile(runnable(rewritten, source.tokenize(rewritten)))
        literals = source.string_literals(tokens) - self._domain_literals
        if rewritten != expression and literals:
            self._domain_literals |= literals
            self.literal_version += 1
        return CompiledSelector(
            expression,
            program,
            source.estimate_cost(tokens),
            self,
            source.device_reads(expression, tokens),
        )

    def new_activation(self, device: DeviceView) -> Any:
        """Build the runtime activation for ``device`` (called by DeviceView)."""
        return self._run_env.Activation(
            {
                "device.driver": device.driver,
                "device.attributes": device.attributes,
                "device.capacity": device.capacity,
                "device.allowMultipleAllocations": device.allow_multiple_allocations,
                _INDEXED_NAMES["attributes"]: self._padded(device.attributes),
                _INDEXED_NAMES["capacity"]: self._padded(device.capacity),
            }
        )

    def _padded(self, domains: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        missing = self._domain_literals.difference(domains)
        if not missing:
            return domains
        padded = dict(domains)
        padded.update((domain, {}) for domain in missing)
        return padded
