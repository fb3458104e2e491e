"""The host API fuzzed with the admin token: the odd-numbered operations.

The even-numbered ones are in ``test_host_fuzz_even.py``: the two halves are the suite's
longest modules, and pytest-xdist (``--dist loadfile``) runs them on different workers. What
is checked is in ``tests/fuzz/fuzzing.py``.
"""

from __future__ import annotations

import pytest

from tests.fuzz.fuzzing import Target, fuzz

pytestmark = pytest.mark.slow


def test_fuzzing_the_odd_host_operations_with_the_admin_token(host: Target) -> None:
    fuzz(host, shard=(1, 2))
