"""Fidelity measured: one request corpus replayed against allot's embedded API server and
real Kubernetes 1.36, the responses compared after normalising what legitimately differs.

:mod:`.corpus` reads the requests (``corpus/*.yaml``, plus the malformed, hostile,
validation, patch, apply and authorization cases of ``tests/scenarios``), :mod:`.replay`
sends them over HTTPS to one server, :mod:`.compare` normalises and compares two answers,
and :mod:`.run` starts both servers, replays the corpus on each and reports
``N requests, M identical, K different``. ``explained.yaml`` lists every known
difference with its row in docs/conformance.md; ``make conformance`` prints the result and
tests/e2e/test_conformance.py fails on a difference that is not listed there.
"""
