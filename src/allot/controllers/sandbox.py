"""The process runtime's isolation boundary: each container in a bubblewrap sandbox.

A container gets what a container runtime would give it, and nothing of the platform:

* new mount, PID, IPC and UTS namespaces (hostname: the pod's), and a network namespace
  with loopback only, unless a host pod asks for ``hostNetwork``/``hostPID``/``hostIPC``;
* the system directories read-only (``/usr``, ``/etc``, ``/opt``, the ``/bin``/``/lib``
  family, ``/sys``, and the Python installation allot runs from, so ``python`` works),
  a fresh ``/dev`` with only the device nodes of its claimed GPUs, a private ``/proc``,
  ``/tmp`` and writable working directory ``/pod`` (also ``HOME``);
* nothing writable in RAM but a 64 MiB ``/dev/shm`` (a container runtime's default): the
  sandbox's root and ``/dev`` are remounted read-only (bwrap makes them in RAM, writable
  by the user it maps when allot is not root), and ``/tmp`` is a directory of the
  container's on disk beside ``/pod``, so it counts against ``ephemeral-storage``
  (``allot.controllers.localstorage``) as a container's ``/tmp`` does on a node;
* its pod's process limit as ``RLIMIT_NPROC``, set inside where no cgroup holds it
  (``allot.controllers.limits``);
* none of allot's data directory (kubeconfigs, tokens, the store, the audit log, other
  pods' directories and logs): it is not bound, and masked where it lies inside a bound
  directory;
* an unprivileged user when allot runs as root: ``runAsUser``/``runAsGroup`` where
  given, else ``nobody``; capabilities and the bounding set dropped, ``no_new_privs`` set.
  Only a host pod may run as root (``runAsUser: 0``), or ``privileged`` (all of ``/dev``,
  capabilities kept). When allot does not run as root, the sandbox is an unprivileged
  user namespace and processes keep allot's user.

Host pods may also mount ``hostPath`` volumes (bound at their ``volumeMounts``); tenant
pods cannot (the entitlement policy refuses them, and :class:`Confinement` refuses them
again here). Built by ``allot.platform``; used by ``allot.controllers.runtimes``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allot.controllers import processes
from allot.types import Obj

NOBODY = 65534
WORKDIR = "/pod"
SHM_BYTES = 64 * 2**20  # containerd's and Docker's /dev/shm
# sets RLIMIT_NPROC and execs the rest, where util-linux's prlimit is missing
NPROC_EXEC = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); os.execvp(sys.argv[2], sys.argv[2:])"
)
TOOLS_DIR = "/.allot/bin"
SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/sys")
LINKED_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
INSTALL_HINT = (
    "the process runtime runs every container in a bubblewrap sandbox and needs `bwrap`: "
    "install it (apt-get install bubblewrap), or start with --unsandboxed to run pods as "
    "plain processes of allot's user, with access to its files (no isolation)"
)


class SandboxUnavailable(Exception):
    """This machine cannot run sandboxed containers; the message says what to install."""


class ConfinementError(Exception):
    """A pod asks for something its sandbox must not give it; the message says what."""


@dataclass(frozen=True)
class HostMount:
    source: str
    target: str
    read_only: bool


@dataclass
class Confinement:
    """What one container's sandbox holds, read from the pod and container specs."""

    hostname: str
    directory: Path
    tmp: Path | None = None  # what /tmp is (None: a 64 MiB tmpfs)
    nproc: int | None = None  # RLIMIT_NPROC to set inside (None: a cgroup bounds it)
    tools: Path | None = None
    device_nodes: list[Path] = field(default_factory=list)
    gpu_buses: list[str] = field(default_factory=list)
    run_as_user: int | None = None
    run_as_group: int | None = None
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    privileged: bool = False
    mounts: list[HostMount] = field(default_factory=list)
    # what its devices' driver binds (an MPS daemon's pipes at /tmp/nvidia-mps and its
    # shared memory at /dev/shm): not the pod's own hostPath volumes
    device_mounts: list[HostMount] = field(default_factory=list)

    @classmethod
    def of(cls, pod: Obj, container: Obj, directory: Path, tenant_pod: bool) -> Confinement:
        """The confinement a pod's container asks for; ConfinementError for a tenant's pod
        that asks for what only host pods may have."""
        spec = pod.get("spec") or {}
        pod_context = spec.get("securityContext") or {}
        context = container.get("securityContext") or {}
        confinement = cls(
            hostname=(spec.get("hostname") or pod["metadata"]["name"])[:63],
            directory=directory,
            run_as_user=_first_int(context.get("runAsUser"), pod_context.get("runAsUser")),
            run_as_group=_first_int(context.get("runAsGroup"), pod_context.get("runAsGroup")),
            host_network=bool(spec.get("hostNetwork")),
            host_pid=bool(spec.get("hostPID")),
            host_ipc=bool(spec.get("hostIPC")),
            privileged=bool(context.get("privileged")),
            mounts=_host_mounts(spec, container),
        )
        if tenant_pod:
            confinement.refuse_host_access()
        return confinement

    def refuse_host_access(self) -> None:
        """The runtime's own check of the entitlement policy's pod rules."""
        asked = [
            what
            for what, wanted in (
                ("hostNetwork", self.host_network),
                ("hostPID", self.host_pid),
                ("hostIPC", self.host_ipc),
                ("privileged", self.privileged),
                ("hostPath volumes", bool(self.mounts)),
                ("runAsUser 0", self.run_as_user == 0),
            )
            if wanted
        ]
        if asked:
            raise ConfinementError(
                f"a tenant's pod cannot use {', '.join(asked)}: it would leave its sandbox"
            )


@dataclass
class Sandbox:
    """Builds the ``bwrap`` command line that runs a container's argv confined."""

    bwrap: str
    setpriv: str | None
    hidden: Sequence[Path]
    as_root: bool = field(default_factory=lambda: os.geteuid() == 0)
    prlimit: str | None = field(default_factory=lambda: shutil.which("prlimit"))

    @classmethod
    def find(cls, hidden: Sequence[Path]) -> Sandbox:
        """The sandbox of this machine; SandboxUnavailable says what to install."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable(INSTALL_HINT)
        as_root = os.geteuid() == 0
        setpriv = shutil.which("setpriv")
        if as_root and setpriv is None:
            raise SandboxUnavailable(
                "the sandbox drops to an unprivileged user with setpriv (util-linux), "
                "which is not installed"
            )
        return cls(bwrap, setpriv, [p.resolve() for p in hidden], as_root)

    def command(self, argv: list[str], confinement: Confinement) -> list[str]:
        """The argv that runs ``argv`` inside ``confinement``."""
        return [
            self.bwrap,
            *self._namespaces(confinement),
            *self._filesystem(confinement),
            *self._devices(confinement),
            *self._read_only(confinement),
            "--chdir",
            WORKDIR,
            "--",
            *self._identity(confinement),
            *self._process_limit(confinement),
            *argv,
        ]

    def user_of(self, confinement: Confinement) -> tuple[int, int] | None:
        """Who owns the working directory: the container's user when allot is root."""
        if not self.as_root:
            return None
        uid = confinement.run_as_user
        if uid is None:  # a privileged host pod is root; every other pod is nobody
            uid = 0 if confinement.privileged else NOBODY
        gid = confinement.run_as_group
        return uid, NOBODY if gid is None else gid

    def signal_contents(self, group: int, number: signal.Signals) -> None:
        """Signal a sandbox's processes but not bwrap itself: bwrap dies of SIGTERM and
        would take the container with it before its grace period. The container's
        processes share bwrap's process group (no ``--new-session``)."""
        bwrap = os.path.realpath(self.bwrap)
        for pid in processes.group_members(group):
            with contextlib.suppress(OSError):
                if pid == group or os.path.realpath(f"/proc/{pid}/exe") == bwrap:
                    continue
                os.kill(pid, number)

    def _namespaces(self, confinement: Confinement) -> list[str]:
        # SIGKILL of bwrap kills the whole PID namespace (--die-with-parent): the last
        # resort of a stop reaches processes that left the group.
        args = ["--die-with-parent", "--unshare-uts"]
        args += ["--hostname", confinement.hostname]
        if not self.as_root:
            args.append("--unshare-user")
        for flag, shared in (
            ("--unshare-net", confinement.host_network),
            ("--unshare-pid", confinement.host_pid),
            ("--unshare-ipc", confinement.host_ipc),
        ):
            if not shared:
                args.append(flag)
        return args

    def _filesystem(self, confinement: Confinement) -> list[str]:
        # /proc and /tmp first: an interpreter or mount under /tmp (a venv in a scratch
        # clone) is bound on top of the private /tmp, not hidden by it
        args = ["--proc", "/proc"]
        if confinement.tmp is not None:
            args += ["--bind", str(confinement.tmp), "/tmp"]
        else:
            args += ["--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/tmp"]
        for directory in LINKED_DIRS:
            if os.path.islink(directory):
                args += ["--symlink", os.readlink(directory), directory]
            elif os.path.isdir(directory):
                args += ["--ro-bind", directory, directory]
        bound: list[str] = []
        for directory in (*SYSTEM_DIRS, *_python_dirs()):
            if os.path.isdir(directory) and not _inside(directory, bound):
                args += [*_parents(directory), "--ro-bind", directory, directory]
                bound.append(directory)
        args += ["--bind", str(confinement.directory), WORKDIR]
        if confinement.tools is not None:
            args += ["--perms", "0755", "--dir", str(Path(TOOLS_DIR).parent)]
            args += ["--ro-bind", str(confinement.tools), TOOLS_DIR]
        for mount in confinement.mounts:
            args += _parents(mount.target)
            args += ["--ro-bind" if mount.read_only else "--bind", mount.source, mount.target]
        for hidden in self._masks(confinement, bound):  # the data directory never shows
            args += ["--tmpfs", hidden]
        return args

    def _masks(self, confinement: Confinement, bound: Sequence[str] | None = None) -> list[str]:
        """The hidden directories that lie inside what the sandbox binds (system and
        Python directories, ``hostPath`` mounts): each gets an empty tmpfs on top."""
        if bound is None:
            bound = [d for d in (*SYSTEM_DIRS, *_python_dirs()) if os.path.isdir(d)]
        visible = [*bound, *(m.source for m in confinement.mounts)]
        return [str(hidden) for hidden in self.hidden if _inside(str(hidden), visible)]

    def _devices(self, confinement: Confinement) -> list[str]:
        binds = []  # the driver's binds, over the private /tmp and /dev/shm
        for mount in confinement.device_mounts:
            binds += ["--bind", mount.source, mount.target]
        if confinement.privileged:
            return ["--dev-bind", "/dev", "/dev", *binds]
        args = ["--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
        for node in confinement.device_nodes:
            args += ["--dev-bind", str(node), str(node)]
        args += binds
        gpus = _gpus_mask(confinement)
        if gpus is not None:  # other GPUs' entries hidden too
            args += ["--tmpfs", str(gpus)]
            for bus in confinement.gpu_buses:
                args += ["--ro-bind", str(gpus / bus), str(gpus / bus)]
        return args

    def _read_only(self, confinement: Confinement) -> list[str]:
        """Last: the sandbox's root, ``/dev`` and the masks read-only (bwrap makes them
        tmpfs; without root they belong to the user it maps, who could fill RAM)."""
        args = ["--remount-ro", "/"]
        if not confinement.privileged:
            args += ["--remount-ro", "/dev"]
        gpus = _gpus_mask(confinement)
        for mask in [*self._masks(confinement), *([str(gpus)] if gpus else [])]:
            args += ["--remount-ro", mask]
        return args

    def _process_limit(self, confinement: Confinement) -> list[str]:
        """``RLIMIT_NPROC`` set inside the sandbox, after its user namespace exists: the
        kernel counts it per user namespace (each container without root; per user id as
        root), and set outside it would count every process of allot's user."""
        if confinement.nproc is None:
            return []
        if self.prlimit is not None:
            return [self.prlimit, f"--nproc={confinement.nproc}", "--"]
        return [sys.executable, "-I", "-S", "-c", NPROC_EXEC, str(confinement.nproc)]

    def _identity(self, confinement: Confinement) -> list[str]:
        user = self.user_of(confinement)
        if user is None:
            return []
        uid, gid = user
        if uid == 0:
            return [] if confinement.privileged else [*self._drop_capabilities()]
        assert self.setpriv is not None
        return [
            self.setpriv,
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]

    def _drop_capabilities(self) -> list[str]:
        assert self.setpriv is not None
        return [self.setpriv, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def _gpus_mask(confinement: Confinement) -> Path | None:
    """``/proc/driver/nvidia/gpus``, where a container with real GPUs gets an empty tmpfs
    over it with only its own GPUs' entries bound in."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus if confinement.device_nodes and gpus.is_dir() else None


def _first_int(*values: Any) -> int | None:
    for value in values:
        if value is not None:
            return int(value)
    return None


def _host_mounts(spec: Obj, container: Obj) -> list[HostMount]:
    paths = {
        v["name"]: str(v["hostPath"].get("path", ""))
        for v in spec.get("volumes") or []
        if v.get("hostPath")
    }
    return [
        HostMount(paths[m["name"]], m["mountPath"], bool(m.get("readOnly")))
        for m in container.get("volumeMounts") or []
        if m.get("name") in paths
    ]


def _python_dirs() -> list[str]:
    """The interpreter allot runs from (and its virtual environment): read-only, so a
    container's ``python`` is the platform's, as the demo and tests use it."""
    found = []
    for prefix in (sys.base_prefix, sys.prefix):
        resolved = os.path.realpath(prefix)
        if resolved not in found:
            found.append(resolved)
    return found


def _inside(path: str, directories: Sequence[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in directories)


def _parents(directory: str) -> list[str]:
    """``--dir`` for each missing ancestor, world-traversable (bwrap would copy the
    host's mode, and ``/root`` is 0700)."""
    args: list[str] = []
    parts = Path(directory).parts[1:-1]
    for depth in range(1, len(parts) + 1):
        ancestor = "/" + "/".join(parts[:depth])
        if ancestor not in ("/usr", "/etc", "/opt", "/sys", "/tmp", "/proc", "/dev"):
            args += ["--perms", "0755", "--dir", ancestor]
    return args
