"""A rolling update never exceeds ``replicas + maxSurge`` pods nor drops below
``replicas - maxUnavailable`` ready ones, and always finishes, whatever the limits (int
or percent) and however slowly pods become ready (hypothesis over the real controllers)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from allot.api.pods import is_pod_ready
from tests.apps_driver import NAMESPACE, AppsDriver, image_of
from tests.test_controller_apps import _deployment, _template

LIMITS = st.one_of(st.integers(0, 3), st.sampled_from(["0%", "25%", "50%", "100%"]))


def _resolve(value: int | str, replicas: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    share = int(value[:-1]) * replicas / 100
    return math.ceil(share) if round_up else math.floor(share)


@settings(max_examples=25, deadline=None)
@given(replicas=st.integers(1, 5), surge=LIMITS, unavailable=LIMITS, batch=st.integers(1, 3))
def test_rolling_update_stays_within_its_limits(
    replicas: int, surge: int | str, unavailable: int | str, batch: int
) -> None:
    assume(surge not in (0, "0%") or unavailable not in (0, "0%"))
    max_surge = _resolve(surge, replicas, True)
    max_unavailable = _resolve(unavailable, replicas, False)
    if max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    max_unavailable = min(max_unavailable, replicas)
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }
    with tempfile.TemporaryDirectory() as scratch:
        driver = AppsDriver(Path(scratch))
        try:
            driver.context.create(
                "Deployment", _deployment({"replicas": replicas, "strategy": strategy}), "kubectl"
            )
            driver.settle()
            driver.make_ready("all")
            driver.settle()
            deployment = driver.context.get("Deployment", NAMESPACE, "web")
            assert deployment is not None
            deployment["spec"]["template"] = _template("v2")
            driver.context.update("Deployment", deployment, "kubectl")
            driver.settle()
            for _ in range(40):
                pods = [p for p in driver.pods() if not p["metadata"].get("deletionTimestamp")]
                ready = [p for p in pods if is_pod_ready(p)]
                assert len(pods) <= replicas + max_surge
                assert len(ready) >= replicas - max_unavailable
                if len(ready) == replicas == len(pods) and all(image_of(p) == "v2" for p in pods):
                    break
                assert len(ready) < len(pods), "the rollout is stuck with every pod ready"
                driver.make_ready(batch)
                driver.settle()
            else:
                raise AssertionError("the rollout never finished")
        finally:
            driver.close()
