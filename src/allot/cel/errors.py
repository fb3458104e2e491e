"""Errors of the DRA selector environment.

Class tree::

    CelError
    ├── CompileError      the expression is rejected (syntax, types, result type, cost,
    │                     length); ``reason`` says which Kubernetes field-error type applies
    └── EvaluationError   evaluating on one device failed (missing key, unsupported
                          attribute value, non-bool result); the allocator treats it as
                          fatal for the whole allocation, as Kubernetes does

Texts follow ``k8s.io/dynamic-resource-allocation/cel`` so tests can pin them.
"""

from __future__ import annotations

import enum


class CelError(Exception):
    """Root of the CEL errors."""


class CompileErrorReason(enum.Enum):
    INVALID = "Invalid"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "TooLong"
    INTERNAL = "InternalError"


class CompileError(CelError):
    def __init__(
        self, detail: str, reason: CompileErrorReason = CompileErrorReason.INVALID
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.reason = reason


class EvaluationError(CelError):
    """A runtime error; ``str()`` is the text Kubernetes puts after ``CEL runtime error:``."""
