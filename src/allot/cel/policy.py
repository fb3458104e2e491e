"""The CEL environment of ValidatingAdmissionPolicy expressions.

Admission expressions see ``object``, ``oldObject``, ``params``, ``request`` and
``namespaceObject`` as dynamic JSON-like values (the wire form of the objects), plus the
policy's own ``variables.<name>`` in declaration order, ``authorizer`` and
``authorizer.requestResource`` (:mod:`allot.cel.authz`, answered by the checker the
compiler is given), with Kubernetes' extension libraries (strings, lists, regex,
quantity, semver, optionals). Compile errors read like the API server's (``compilation
failed: ERROR: <input>:1:5: ...``); runtime errors like ``no such key: foo``. Pure: no
I/O. Used by :mod:`allot.registry.policies` and policy validation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from allot.cel import authz, cost, source
from allot.cel.compiler import (
    clean_runtime_message,
    evaluate_metered,
    invalid_matches_literals,
    new_env,
    program_regex_error,
    runnable,
    type_display_name,
)
from allot.cel.errors import CompileError, EvaluationError

T = cel.Type
POLICY_INPUTS = ("object", "oldObject", "params", "request", "namespaceObject")
VARIABLES_PREFIX = "variables."
MAX_EXPRESSION_LENGTH = 5 * 1024 * 1024


@dataclass(frozen=True)
class PolicyExpression:
    """A checked expression; ``evaluate`` returns plain Python values."""

    expression: str
    result_type: str
    program: Any
    env: Any

    def evaluate(self, inputs: Mapping[str, Any]) -> Any:
        result = evaluate_metered(
            self.program, self.env.Activation(dict(inputs)), cost.PER_CALL_LIMIT
        )
        if str(result.type().name()) == "ERROR":
            raise EvaluationError(clean_runtime_message(str(result.value())))
        return result.plain_value()


class PolicyCompiler:
    """Compiles admission expressions, cached by (variables in scope, text); ``checker``
    answers the ``authorizer`` library's checks (None: they err, for validation only)."""

    def __init__(self, checker: authz.Checker | None = None) -> None:
        self._functions = authz.function_declarations(checker)
        self._envs: dict[tuple[str, ...], Any] = {}
        self._cache: dict[tuple[tuple[str, ...], str], PolicyExpression | CompileError] = {}

    def compile(self, expression: str, variables: Sequence[str] = ()) -> PolicyExpression:
        key = (tuple(variables), expression)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._compile(expression, key[0])
            self._cache[key] = cached
        if isinstance(cached, CompileError):
            raise cached
        return cached

    def _compile(
        self, expression: str, variables: tuple[str, ...]
    ) -> PolicyExpression | CompileError:
        if len(expression) > MAX_EXPRESSION_LENGTH:
            return CompileError(f"must be no more than {MAX_EXPRESSION_LENGTH} bytes")
        env = self._env(variables)
        try:
            checked = env.compile(expression)
        except RuntimeError as err:
            return CompileError("compilation failed: " + _clean(str(err)))
        tokens = source.tokenize(expression)
        refused = invalid_matches_literals(expression, tokens) or program_regex_error(tokens)
        if refused is not None:
            return refused
        text = runnable(expression, tokens)
        program = checked if text == expression else env.compile(text)
        return PolicyExpression(expression, type_display_name(checked.return_type()), program, env)

    def _env(self, variables: tuple[str, ...]) -> Any:
        env = self._envs.get(variables)
        if env is None:
            declared = dict.fromkeys(POLICY_INPUTS, T.DYN)
            declared.update(authz.VARIABLES)
            declared.update({VARIABLES_PREFIX + name: T.DYN for name in variables})
            env = new_env(declared, functions=self._functions)
            self._envs[variables] = env
        return env


def _clean(text: str) -> str:
    lines = text.splitlines()
    if lines:
        lines[0] = lines[0].removeprefix("INVALID_ARGUMENT: ")
    cleaned = [line.removesuffix(" [INVALID_ARGUMENT]") for line in lines]
    return "\n".join(cleaned)


def as_bool(expression: PolicyExpression, inputs: Mapping[str, Any]) -> bool:
    """Evaluate a validation or match condition, which must produce a bool."""
    value = expression.evaluate(inputs)
    if not isinstance(value, bool):
        raise EvaluationError(
            f"expression '{expression.expression}' resulted in unexpected type "
            f"{type(value).__name__}; expected bool"
        )
    return value
