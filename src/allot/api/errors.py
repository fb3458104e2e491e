"""Errors raised by the API model layer.

Class tree::

    ApiError
    ├── QuantityError      a string is not a Kubernetes quantity
    ├── SemverError        a string is not a strict semantic version
    ├── ObjectTooLargeError an object is larger than the API server accepts
    ├── ClaimNotCreatedError a pod's template claim is not recorded yet
    └── DecodeError        a document cannot be decoded into a known kind
        ├── UnknownKindError   apiVersion/kind is not served
        └── StrictDecodingError unknown or duplicate fields, wrong JSON types

The manifests layer turns DecodeErrors into Kubernetes ``Status`` objects; nothing
below it knows about HTTP codes.
"""

from __future__ import annotations


class ApiError(Exception):
    """Root of the API model errors."""


class QuantityError(ApiError, ValueError):
    """Text that ``resource.ParseQuantity`` would reject; the message is upstream's."""


class SemverError(ApiError, ValueError):
    """Text that is not a strict semver 2.0.0 version."""


class ObjectTooLargeError(ApiError):
    """An object over the API server's request limit (3 MiB); the text is upstream's."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"Request entity too large: limit is {limit}")
        self.limit = limit


class DecodeError(ApiError):
    """A document could not be decoded into an API object."""


class UnknownKindError(DecodeError):
    """The document's apiVersion/kind pair is not one this server knows."""

    def __init__(self, message: str, *, api_version: str, kind: str) -> None:
        super().__init__(message)
        self.api_version = api_version
        self.kind = kind


class StrictDecodingError(DecodeError):
    """Unknown fields or wrongly typed values, reported like the API server's decoder.

    ``problems`` are the individual texts (``unknown field "spec.foo"``); ``hints`` are
    allot's own advice (for example the v1beta1 shape under v1), never part of the
    upstream message.
    """

    def __init__(
        self, kind: str, version: str, problems: list[str], hints: list[str] | None = None
    ) -> None:
        self.kind = kind
        self.version = version
        self.problems = problems
        self.hints = hints or []
        super().__init__(
            f'{kind} in version "{version}" cannot be handled as a {kind}: {_decoding(problems)}'
        )


STRICT_PROBLEMS = ("unknown field ", "duplicate field ")


def _decoding(problems: list[str]) -> str:
    """The decoder's text: a value that cannot be decoded (a wrong JSON type, a malformed
    quantity) ends decoding with that one error, as Go's decoder does, before the strict
    checks (``strict decoding error: unknown field ...``) are made."""
    failed = [p for p in problems if not p.startswith(STRICT_PROBLEMS)]
    return failed[0] if failed else f"strict decoding error: {', '.join(problems)}"


def yaml_error_text(err: Exception) -> str:
    """A PyYAML error in the words kubectl uses for malformed YAML
    (``error converting YAML to JSON: yaml: line N: PROBLEM``), for every reader of files."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = f"line {mark.line + 1}: " if mark is not None else ""
    problem = getattr(err, "problem", None) or getattr(err, "context", None)
    if problem is None and mark is None:
        return f"error converting YAML to JSON: yaml: {err}"
    return f"error converting YAML to JSON: yaml: {line}{problem or 'malformed YAML'}"


class ClaimNotCreatedError(ApiError, LookupError):
    """A pod's claim comes from a template whose ResourceClaim is not recorded yet."""
