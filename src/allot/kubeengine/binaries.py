"""Which real Kubernetes binaries allot runs, where they are, and whether they are the right ones.

The real engine (``allot up --engine kubernetes``) runs five upstream programs: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and kwok. ``make kube``
(:mod:`allot.kubeengine.build`) builds them from the Go modules in ``tools/kube`` into a
per-user cache outside any clone (``$XDG_CACHE_HOME/allot/kube/v1.36.N/bin``);
``$ALLOT_KUBE_BIN`` names a directory of binaries a user already has (the official
release binaries work the same). The versions here are the ones ``tools/kube/*/go.mod``
require (a test keeps the two in step); every binary is asked ``--version`` before it is
used, and binaries of another version are refused, naming what was found.
"""

from __future__ import annotations

import mmap
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "3.6.8"  # the etcd Kubernetes 1.36.3 names in build/dependencies.yaml
KWOK_VERSION = "v0.8.0"
KUEUE_VERSION = "v0.19.2"  # optional: only the Kueue tests use it, and skip without it
PROMETHEUS_OPERATOR_VERSION = "v0.85.0"  # optional: its PrometheusRule CRD, for the tests
BIN_ENV = "ALLOT_KUBE_BIN"
CACHE_ENV = "ALLOT_KUBE_CACHE"  # the cache's root, for CI and tests; default under XDG
VERSION_SECONDS = 20.0


@dataclass(frozen=True)
class Program:
    """One upstream program: its file name, the version it must print, how to read it."""

    name: str
    version: str
    pattern: str  # a regex whose group 1 is the version `--version` prints


PROGRAMS = (
    Program("etcd", ETCD_VERSION, r"etcd Version: (\S+)"),
    Program("kube-apiserver", KUBERNETES_VERSION, r"Kubernetes (v\S+)"),
    Program("kube-controller-manager", KUBERNETES_VERSION, r"Kubernetes (v\S+)"),
    Program("kube-scheduler", KUBERNETES_VERSION, r"Kubernetes (v\S+)"),
    Program("kwok", KWOK_VERSION, r"kwok version (v?\S+)"),
)


class BinariesError(Exception):
    """The real engine's binaries are missing, broken or of another version."""


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """The per-user cache the builds go to: ``$ALLOT_KUBE_CACHE``, else XDG's cache."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "allot" / "kube"


def cache_bin_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where ``make kube`` puts this version's binaries."""
    return cache_root(env) / KUBERNETES_VERSION / "bin"


def bin_dir(env: Mapping[str, str] | None = None) -> Path:
    """The directory the engine runs binaries from: ``$ALLOT_KUBE_BIN``, else the cache."""
    env = os.environ if env is None else env
    chosen = env.get(BIN_ENV)
    return Path(chosen).expanduser() if chosen else cache_bin_dir(env)


def printed_version(path: Path, program: Program) -> str | None:
    """The version ``PATH --version`` prints, or None when it prints none or cannot run."""
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(program.pattern, done.stdout + done.stderr)
    return found.group(1) if found else None


def _same_version(found: str, wanted: str) -> bool:
    return found.lstrip("v") == wanted.lstrip("v")


def missing_or_wrong(directory: Path) -> list[str]:
    """What is wrong with DIRECTORY's binaries, one phrase per program; empty when all fit."""
    problems = []
    for program in PROGRAMS:
        path = directory / program.name
        if not os.access(path, os.X_OK):
            problems.append(f"{program.name} missing")
            continue
        found = printed_version(path, program)
        if found is None:
            problems.append(f"{program.name} prints no version")
        elif not _same_version(found, program.version):
            problems.append(f"{program.name} is {found}, not {program.version}")
    return problems


KUEUE = "kueue"
_KUEUE_DEPENDENCY = re.compile(rb"\n(?:mod|dep)\tsigs\.k8s\.io/kueue\t(v[^\t\n]+)")


def kueue_manifests(directory: Path) -> Path:
    """Where ``make kube`` puts Kueue's CRDs and webhook manifests for the binaries of
    ``directory`` (its module's ``config/components/crd`` and ``webhook``)."""
    return directory.parent / f"kueue-{KUEUE_VERSION}"


def kueue_problem(directory: Path) -> str | None:
    """What is wrong with DIRECTORY's Kueue, or None when it is the right one.

    Kueue prints its version only in its first log line, so the version is read from the
    Go build information in the binary (what ``go version -m`` prints: the module
    ``sigs.k8s.io/kueue`` it was built from)."""
    path = directory / KUEUE
    if not os.access(path, os.X_OK):
        return f"{KUEUE} missing"
    if not (kueue_manifests(directory) / "crd" / "kustomization.yaml").is_file():
        return f"{KUEUE}'s manifests missing"
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found = _KUEUE_DEPENDENCY.search(data)
        version = bytes(found.group(1)).decode() if found else None
    if version is None:
        return f"{KUEUE} carries no build information of sigs.k8s.io/kueue"
    return None if version == KUEUE_VERSION else f"{KUEUE} is {version}, not {KUEUE_VERSION}"


def prometheus_rule_crd(directory: Path) -> Path:
    """Where ``make kube`` puts the Prometheus Operator's PrometheusRule CRD for the binaries
    of ``directory`` (from its module's ``example/prometheus-operator-crd``): what the tests
    install to hold the rendered PrometheusRule against a real API server."""
    name = "monitoring.coreos.com_prometheusrules.yaml"
    return directory.parent / f"prometheus-operator-{PROMETHEUS_OPERATOR_VERSION}" / name


def locate(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Each program's path, checked; raises BinariesError saying what was found and what to do."""
    env = os.environ if env is None else env
    directory = bin_dir(env)
    problems = missing_or_wrong(directory)
    if problems:
        where = f"${BIN_ENV}={directory}" if env.get(BIN_ENV) else str(directory)
        wanted = f"Kubernetes {KUBERNETES_VERSION}, etcd {ETCD_VERSION}, kwok {KWOK_VERSION}"
        remedy = (
            f"point ${BIN_ENV} at binaries of {wanted}"
            if env.get(BIN_ENV)
            else f"run `make kube` to build {wanted}, or set ${BIN_ENV} to binaries you have"
        )
        raise BinariesError(f"real Kubernetes binaries in {where}: {'; '.join(problems)}: {remedy}")
    return {program.name: directory / program.name for program in PROGRAMS}
