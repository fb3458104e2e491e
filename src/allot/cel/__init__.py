"""The DRA selector CEL environment of Kubernetes 1.36 on the C++ CEL runtime.

Public surface: :class:`SelectorCompiler` (compile with cache, Kubernetes' texts),
:class:`CompiledSelector` (evaluate on a device), :class:`DeviceView` (a device prepared
once for any number of selectors, with its results cached). Pure: no I/O.
"""

from allot.cel.compiler import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    CompiledSelector,
    SelectorCompiler,
)
from allot.cel.device import DeviceView
from allot.cel.errors import CelError, CompileError, CompileErrorReason, EvaluationError

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH",
    "CelError",
    "CompileError",
    "CompileErrorReason",
    "CompiledSelector",
    "DeviceView",
    "EvaluationError",
    "SelectorCompiler",
]
