"""Whatever volumes and claims exist, and in whatever order they are created, the
persistent volume controller leaves a consistent binding (hypothesis over the real
controller): a Bound claim and its volume name each other and the volume satisfies the
claim, no volume serves two claims, and no claim is left Pending while an Available
volume would satisfy it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.controllers import volumebinding as vb
from allot.registry import HOST_CLUSTER
from allot.types import Obj
from tests.apps_driver import NAMESPACE
from tests.test_controller_volumes import VolumeDriver

MODES = st.lists(
    st.sampled_from(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"]),
    min_size=1,
    max_size=3,
    unique=True,
)
CLASSES = st.sampled_from(["", "manual"])
SIZES = st.integers(1, 5)


def _volume(index: int, size: int, modes: list[str], klass: str) -> Obj:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{index}"},
        "spec": {
            "storageClassName": klass,
            "capacity": {"storage": f"{size}Gi"},
            "accessModes": modes,
            "hostPath": {"path": f"/data/{index}"},
        },
    }


def _claim(index: int, size: int, modes: list[str], klass: str) -> Obj:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"claim-{index}"},
        "spec": {
            "storageClassName": klass,
            "accessModes": modes,
            "resources": {"requests": {"storage": f"{size}Gi"}},
        },
    }


SHAPES = st.tuples(SIZES, MODES, CLASSES)


@settings(max_examples=30, deadline=None)
@given(
    volumes=st.lists(SHAPES, max_size=5),
    claims=st.lists(SHAPES, max_size=5),
    order=st.randoms(use_true_random=False),
)
def test_binding_is_consistent_and_complete(
    volumes: list[tuple[Any, ...]], claims: list[tuple[Any, ...]], order: Any
) -> None:
    documents = [_volume(i, *shape) for i, shape in enumerate(volumes)]
    documents += [_claim(i, *shape) for i, shape in enumerate(claims)]
    order.shuffle(documents)
    with tempfile.TemporaryDirectory() as scratch:
        driver = VolumeDriver(Path(scratch), HOST_CLUSTER)
        try:
            driver.create(
                {
                    "kind": "StorageClass",
                    "metadata": {"name": "manual"},
                    "provisioner": "kubernetes.io/no-provisioner",
                }
            )
            for document in documents:
                driver.create(document)
                driver.settle()
            _check(driver)
        finally:
            driver.close()


def _check(driver: VolumeDriver) -> None:
    volumes = {v["metadata"]["name"]: v for v in driver.context.list("PersistentVolume")}
    claims = driver.context.list("PersistentVolumeClaim", NAMESPACE)
    served: set[str] = set()
    for claim in claims:
        phase = claim["status"]["phase"]
        if phase == "Bound":
            volume = volumes[claim["spec"]["volumeName"]]
            assert volume["status"]["phase"] == "Bound"
            assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
            assert volume["spec"]["storageClassName"] == claim["spec"]["storageClassName"]
            assert set(claim["spec"]["accessModes"]) <= set(volume["spec"]["accessModes"])
            assert vb.volume_capacity(volume).compare(vb.requested_storage(claim)) >= 0
            assert volume["metadata"]["name"] not in served
            served.add(volume["metadata"]["name"])
        else:
            assert phase == "Pending"
            free = [v for v in volumes.values() if v["status"]["phase"] == "Available"]
            assert vb.best_volume(claim, free) is None, claim["metadata"]["name"]
    for name, volume in volumes.items():
        assert (volume["status"]["phase"] == "Bound") == (name in served), name
