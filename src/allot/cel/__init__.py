"""The DRA selector CEL environment of Kubernetes 1.36 on the C++ CEL runtime.

Public surface: :class:`SelectorCompiler` (compile with cache, Kubernetes' texts),
:class:`CompiledSelector` (evaluate on a device), :class:`DeviceView` (a device prepared
once for any number of selectors, with its results cached). Pure: no I/O.

The errors are imported with the package; the compiler and the device view (the C++
runtime and protobuf, a tenth of ``allot simulate``'s start-up) on first use of their
names, so a command that places or checks no selector never loads them.
"""

import importlib
from typing import TYPE_CHECKING, Any

from allot.cel.errors import CelError, CompileError, CompileErrorReason, EvaluationError

if TYPE_CHECKING:
    from allot.cel.compiler import (
        CEL_SELECTOR_EXPRESSION_MAX_COST,
        CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
        CompiledSelector,
        SelectorCompiler,
    )
    from allot.cel.device import DeviceView

_LAZY = {
    "CEL_SELECTOR_EXPRESSION_MAX_COST": "allot.cel.compiler",
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH": "allot.cel.compiler",
    "CompiledSelector": "allot.cel.compiler",
    "SelectorCompiler": "allot.cel.compiler",
    "DeviceView": "allot.cel.device",
}

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


def __getattr__(name: str) -> Any:
    """The compiler's and the device view's names, importing their module once."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'allot.cel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
