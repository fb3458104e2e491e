"""``make kube``: build the real engine's binaries from the Go modules in ``tools/kube``.

``python -m allot.kubeengine.build [TOOLS_DIR]`` builds kube-apiserver,
kube-controller-manager and kube-scheduler (``tools/kube/kubernetes``), etcd
(``tools/kube/etcd``) and kwok (``tools/kube/kwok``) into the per-user cache that
:mod:`allot.kubeengine.binaries` names, stamping the versions the way upstream's release
scripts do so that ``--version`` prints the real one, then Kueue (``tools/kube/kueue``),
which only the Kueue tests use: when it cannot be built it says why in one line and the
build still succeeds; the same holds for the Prometheus Operator's PrometheusRule CRD
(``tools/kube/prometheus-operator``: downloaded, not built), which the tests install to hold
the rendered PrometheusRule against the real API server. Binaries already there at the right
version are kept (a second build costs seconds); Go's module and build caches stay in their
default per-user places, so later clones and CI runs reuse them. A cold build prints
progress (packages compiled of the total, elapsed time) and its duration. Go missing, a
module the proxy does not serve and a failed build each end in one line naming what to do,
exit status 1. Called by the Makefile (``make kube``, and ``make test`` before the suite).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from allot.kubeengine.binaries import (
    ETCD_VERSION,
    KUBERNETES_VERSION,
    KUEUE_VERSION,
    KWOK_VERSION,
    PROMETHEUS_OPERATOR_VERSION,
    cache_bin_dir,
    kueue_manifests,
    kueue_problem,
    missing_or_wrong,
    prometheus_rule_crd,
)

PROGRESS_SECONDS = 30.0
LOG_TAIL_LINES = 15
GO_MINIMUM = (1, 26)


class BuildError(Exception):
    """The build cannot go on; the message is the one line the user reads."""


@dataclass(frozen=True)
class Target:
    """One `go build` of one tools module: the packages it makes and how they are stamped."""

    module_dir: str  # under tools/kube
    module: str  # the upstream module, for messages and the proxy check
    version: str
    packages: tuple[str, ...]
    ldflags: tuple[str, ...]


def _kubernetes_ldflags() -> tuple[str, ...]:
    minor = KUBERNETES_VERSION.lstrip("v").split(".")
    values = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": minor[0],
        "gitMinor": minor[1],
        "gitTreeState": "clean",
    }
    return tuple(
        f"-X {package}.{key}={value}"
        for key, value in values.items()
        for package in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
    )


TARGETS = (
    Target(
        "kubernetes",
        "k8s.io/kubernetes",
        KUBERNETES_VERSION,
        tuple(
            f"k8s.io/kubernetes/cmd/{name}"
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
        ),
        _kubernetes_ldflags(),
    ),
    Target(
        "etcd",
        "go.etcd.io/etcd/server/v3",
        f"v{ETCD_VERSION}",
        ("go.etcd.io/etcd/server/v3",),
        (),
    ),
    Target(
        "kwok",
        "sigs.k8s.io/kwok",
        KWOK_VERSION,
        ("sigs.k8s.io/kwok/cmd/kwok",),
        (
            f"-X sigs.k8s.io/kwok/pkg/consts.Version={KWOK_VERSION.lstrip('v')}",
            f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={KUBERNETES_VERSION.lstrip('v')}",
        ),
    ),
)
KUEUE_TARGET = Target(
    "kueue",
    "sigs.k8s.io/kueue",
    KUEUE_VERSION,
    ("sigs.k8s.io/kueue/cmd/kueue",),
    (f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",),
)
"""Optional: built after the engine's binaries when they are there; a failure is reported
and leaves `make kube` successful (only the Kueue tests need it, and they skip)."""
PROMETHEUS_OPERATOR = Target(
    "prometheus-operator",
    "github.com/prometheus-operator/prometheus-operator",
    PROMETHEUS_OPERATOR_VERSION,
    (),
    (),
)
"""Optional and never built: its module is downloaded for the PrometheusRule CRD alone."""
# What each package's binary is called (the etcd server module's root package is etcd).
BINARY_NAMES = {"go.etcd.io/etcd/server/v3": "etcd"}


def _say(message: str) -> None:
    print(f"make kube: {message}", flush=True)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "Go is not installed: install Go >= 1.26 (https://go.dev/dl/), "
            "or set $ALLOT_KUBE_BIN to a directory of Kubernetes 1.36 binaries you have"
        )
    done = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    digits = done.stdout.strip().removeprefix("go").split(".")
    try:
        found = (int(digits[0]), int(digits[1]))
    except (ValueError, IndexError):
        found = (0, 0)
    if found < GO_MINIMUM:
        raise BuildError(
            f"Go {done.stdout.strip() or '(unknown)'} is too old: Kubernetes 1.36 needs "
            "Go >= 1.26 (https://go.dev/dl/), or set $ALLOT_KUBE_BIN to binaries you have"
        )
    return go


def _environment() -> dict[str, str]:
    return {**os.environ, "CGO_ENABLED": "0"}


def _download(go: str, target: Target, directory: Path, env: dict[str, str]) -> None:
    """Fetch the module graph, with one line when the proxy does not serve a module."""
    done = subprocess.run(
        [go, "mod", "download", "-json", target.module],
        cwd=directory,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode == 0:
        return
    reason = _download_error(done.stdout) or done.stderr.strip().splitlines()[-1:]
    proxy = env.get("GOPROXY") or "https://proxy.golang.org,direct"
    raise BuildError(
        f"the Go module proxy ({proxy}) did not serve {target.module} {target.version} "
        f"({''.join(reason)}): check the network and $GOPROXY, or set $ALLOT_KUBE_BIN "
        "to binaries you have"
    )


def _download_error(output: str) -> list[str]:
    try:
        return [str(json.loads(output).get("Error") or "")] if output.strip() else []
    except json.JSONDecodeError:
        return []


def _package_count(go: str, target: Target, directory: Path, env: dict[str, str]) -> int:
    done = subprocess.run(
        [go, "list", "-deps", *target.packages],
        cwd=directory,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return len(done.stdout.split()) if done.returncode == 0 else 0


def _follow(stream: IO[str], log: IO[str], compiled: list[int]) -> None:
    for line in stream:
        log.write(line)
        if line and not line.startswith(("#", " ", "\t", "go: ")):
            compiled[0] += 1


def _build_target(go: str, target: Target, tools: Path, output: Path, log_path: Path) -> None:
    directory = tools / target.module_dir
    env = _environment()
    _download(go, target, directory, env)
    total = _package_count(go, target, directory, env)
    names = ", ".join(_binaries(target))
    _say(f"building {names} ({target.module} {target.version}, {total} packages)")
    started = time.monotonic()
    # -s -w: without the symbol table and DWARF, as Kubernetes' release builds link.
    ldflags = " ".join(("-s", "-w", *target.ldflags))
    command = [go, "build", "-v", "-trimpath", "-ldflags", ldflags]
    # `-o DIR/` names a binary after its package; etcd's (…/server/v3) is named here.
    out = f"{output}/" if len(target.packages) > 1 else str(output / _binaries(target)[0])
    command += ["-o", out, *target.packages]
    with log_path.open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        process = subprocess.Popen(
            command, cwd=directory, env=env, stdout=log, stderr=subprocess.PIPE, text=True
        )
        compiled = [0]
        assert process.stderr is not None
        reader = threading.Thread(target=_follow, args=(process.stderr, log, compiled))
        reader.start()
        while process.poll() is None:
            reader.join(PROGRESS_SECONDS)
            if reader.is_alive():
                elapsed = int(time.monotonic() - started)
                _say(f"  {names}: {compiled[0]} of {total} packages compiled, {elapsed}s")
        reader.join()
        process.stderr.close()
        process.wait()
    if process.returncode != 0:
        raise BuildError(
            f"building {names} failed (exit {process.returncode}); the log is {log_path}: "
            f"{_tail(log_path)}; fix the cause and rerun `make kube`"
        )
    _say(f"  {names} built in {int(time.monotonic() - started)}s")


def _module_source(go: str, target: Target, module_dir: Path) -> Path:
    """Where Go's module cache holds ``target``'s module, as ``module_dir`` requires it."""
    done = subprocess.run(
        [go, "list", "-m", "-f", "{{.Dir}}", target.module],
        cwd=module_dir,
        capture_output=True,
        text=True,
        env=_environment(),
        check=False,
    )
    source = Path(done.stdout.strip())
    if done.returncode != 0 or not source.is_dir():
        raise BuildError(f"{target.module} is not in Go's module cache ({done.stderr.strip()})")
    return source


def _copy_kueue_manifests(go: str, module_dir: Path, target_dir: Path) -> None:
    """Kueue's CRDs and webhook manifests (``config/components/{crd,webhook}`` of the
    module), beside the binary: what running it against the real engine applies."""
    source = _module_source(go, KUEUE_TARGET, module_dir) / "config" / "components"
    if not source.is_dir():
        raise BuildError(f"Kueue's manifests are not in its module ({source} is missing)")
    manifests = kueue_manifests(target_dir)
    shutil.rmtree(manifests, ignore_errors=True)
    for part in ("crd", "webhook"):
        shutil.copytree(source / part, manifests / part)
        for path in (manifests / part).rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)  # the module cache is read-only


def _tail(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-LOG_TAIL_LINES:])


def _rename_outputs(output: Path, target_dir: Path) -> None:
    for path in output.iterdir():
        os.replace(path, target_dir / path.name)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One build per cache at a time (two clones, or CI workers, building together)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(tools: Path) -> Path:
    """Build what the cache lacks into it, then Kueue (:func:`build_kueue`) and the
    PrometheusRule CRD (:func:`fetch_prometheus_rule_crd`); returns the binaries' directory."""
    target_dir = cache_bin_dir()
    with _locked(target_dir.parent):
        _build_engine(tools, target_dir)
        build_kueue(tools, target_dir)
        fetch_prometheus_rule_crd(tools, target_dir)
    return target_dir


def _build_engine(tools: Path, target_dir: Path) -> None:
    problems = missing_or_wrong(target_dir)
    if not problems:
        _say(f"binaries of Kubernetes {KUBERNETES_VERSION} are in {target_dir}")
        return
    go = _go()
    _say(f"building into {target_dir} ({'; '.join(problems)})")
    _say("a cold build takes 10-40 minutes on 2 cores; Go's caches make later ones fast")
    started = time.monotonic()
    target_dir.mkdir(parents=True, exist_ok=True)
    log_path = target_dir.parent / "build.log"
    log_path.write_text("")
    for target in TARGETS:
        if not _needs(target, target_dir):
            continue
        with tempfile.TemporaryDirectory(dir=target_dir.parent) as output:
            _build_target(go, target, tools, Path(output), log_path)
            _rename_outputs(Path(output), target_dir)
    left = missing_or_wrong(target_dir)
    if left:
        raise BuildError(f"the build ended but {'; '.join(left)}; the log is {log_path}")
    _say(f"built in {_minutes(time.monotonic() - started)} into {target_dir}")


def build_kueue(tools: Path, target_dir: Path) -> bool:
    """Kueue into ``target_dir`` unless it is there; whether it is there now. Go missing, a
    module not served or a failed build is one line saying so, never a failure of the
    whole build."""
    if kueue_problem(target_dir) is None:
        _say(f"Kueue {KUEUE_VERSION} is in {target_dir}")
        return True
    log_path = target_dir.parent / "build-kueue.log"
    log_path.write_text("")
    started = time.monotonic()
    try:
        go = _go()
        with tempfile.TemporaryDirectory(dir=target_dir.parent) as output:
            _build_target(go, KUEUE_TARGET, tools, Path(output), log_path)
            _copy_kueue_manifests(go, tools / KUEUE_TARGET.module_dir, target_dir)
            _rename_outputs(Path(output), target_dir)
    except BuildError as error:
        _say(f"Kueue {KUEUE_VERSION} was not built ({error}); the Kueue tests will skip")
        return False
    problem = kueue_problem(target_dir)
    if problem is not None:
        _say(f"Kueue {KUEUE_VERSION} was not built ({problem}); the Kueue tests will skip")
        return False
    _say(f"Kueue built in {_minutes(time.monotonic() - started)} into {target_dir}")
    return True


def fetch_prometheus_rule_crd(tools: Path, target_dir: Path) -> bool:
    """The Prometheus Operator's PrometheusRule CRD beside ``target_dir`` unless it is
    there; whether it is there now. Go missing or the module not served is one line saying
    so, never a failure of the whole build."""
    crd = prometheus_rule_crd(target_dir)
    what = f"the PrometheusRule CRD of the Prometheus Operator {PROMETHEUS_OPERATOR_VERSION}"
    if crd.is_file():
        _say(f"{what} is in {crd.parent}")
        return True
    module_dir = tools / PROMETHEUS_OPERATOR.module_dir
    try:
        if not (module_dir / "go.mod").is_file():
            raise BuildError(f"{module_dir / 'go.mod'} is missing")
        go = _go()
        _download(go, PROMETHEUS_OPERATOR, module_dir, _environment())
        source = _module_source(go, PROMETHEUS_OPERATOR, module_dir)
        source = source / "example" / "prometheus-operator-crd" / crd.name
        if not source.is_file():
            raise BuildError(f"{source} is missing")
    except BuildError as error:
        _say(f"{what} was not fetched ({error}); its test will skip")
        return False
    crd.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=crd.parent, delete=False) as copy:
        copy.write(source.read_bytes())  # the module cache is read-only; the copy is not
    os.chmod(copy.name, 0o644)
    os.replace(copy.name, crd)
    _say(f"{what} fetched into {crd.parent}")
    return True


def _binaries(target: Target) -> list[str]:
    return [BINARY_NAMES.get(p, p.rsplit("/", 1)[-1]) for p in target.packages]


def _needs(target: Target, target_dir: Path) -> bool:
    names = set(_binaries(target))
    return any(problem.split()[0] in names for problem in missing_or_wrong(target_dir))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    tools = Path(args[0]) if args else Path(__file__).resolve().parents[3] / "tools" / "kube"
    try:
        build(tools)
    except BuildError as error:
        print(f"make kube: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
