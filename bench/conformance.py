"""Fidelity measured (issue 29): the request corpus of tests/conformance replayed on allot's
embedded server and on real Kubernetes 1.36, printing ``N requests, M identical, K
different`` and a line per difference (its row in docs/conformance.md, or NEW). Needs the
real binaries (``make kube``); without them it says so and prints nothing else. Run by
``make bench`` and ``make conformance``.
"""

from __future__ import annotations

import sys

from tests.conformance.run import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
