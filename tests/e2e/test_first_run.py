"""The first minutes of a new user: install, start, start again, and what a stopped platform says.

These run ``allot`` as a separate process, the way a user types it: a fresh virtualenv with
only allot's runtime dependencies, ``allot up`` twice on one data directory, a port that is
taken, ``--port 0``, the data-directory rule, a fleet asking for local GPUs without the
``gpu`` extra, and every command that needs a running platform when none is.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from allot.cli.main import main as allot
from tests.e2e.conftest import Cluster

REPO = Path(__file__).resolve().parents[2]
ALLOT = str(Path(sys.executable).with_name("allot"))
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_", "XDG_"))}


@dataclass
class Started:
    process: subprocess.Popen[str]
    banner: str

    @property
    def url(self) -> str:
        first = self.banner.splitlines()[0]
        return first.split(" on ")[1].split(" ")[0]


@contextmanager
def allot_up(data_dir: Path, *extra: str, allot_bin: str = ALLOT) -> Iterator[Started]:
    """``allot up --port 0`` in its own process until its banner, stopped with Ctrl-C."""
    process = subprocess.Popen(
        [allot_bin, "up", "--port", "0", "--data-dir", str(data_dir), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=CLEAN_ENV,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        while not lines or lines[-1] != "Ctrl-C stops it.":
            line = process.stdout.readline()
            assert line, f"allot up ended early: {process.communicate()}"
            lines.append(line.rstrip("\n"))
        yield Started(process, "\n".join(lines))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise


def version_of(kubeconfig: Path) -> dict[str, str]:
    """``GET /version`` with the kubeconfig's server, CA and token (no kubectl needed)."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    token = config["users"][0]["user"]["token"]
    tls = ssl.create_default_context(cafile=cluster["certificate-authority"])
    response = httpx.get(
        f"{cluster['server']}/version",
        verify=tls,
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    response.raise_for_status()
    body: dict[str, str] = response.json()
    return body


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
        and path.suffix not in (".db", ".db-wal", ".db-shm")
        and not path.name.endswith(("-wal", "-shm"))
    }


def test_port_zero_prints_the_real_port_and_kubeconfigs_use_it(tmp_path: Path) -> None:
    with allot_up(tmp_path) as started:
        port = int(started.url.rsplit(":", 1)[1])
        assert port != 0
        kubeconfig = tmp_path / "kubeconfigs" / "host.yaml"
        assert f"export KUBECONFIG={kubeconfig.resolve()}" in started.banner
        assert f"server: https://127.0.0.1:{port}" in kubeconfig.read_text()
        assert version_of(kubeconfig)["gitVersion"].startswith("v1.36")


def test_ctrl_c_ends_open_watches_at_once(tmp_path: Path) -> None:
    """A ``kubectl get -w`` left open does not hold ``allot up`` after Ctrl-C: the stream
    ends as the shutdown begins, cleanly, rather than being cut off at uvicorn's graceful
    timeout (2 s)."""
    with allot_up(tmp_path) as started:
        kubeconfig = yaml.safe_load((tmp_path / "kubeconfigs" / "host.yaml").read_text())
        cluster = kubeconfig["clusters"][0]["cluster"]
        token = kubeconfig["users"][0]["user"]["token"]
        tls = ssl.create_default_context(cafile=cluster["certificate-authority"])
        with (
            httpx.Client(
                base_url=cluster["server"], verify=tls, headers={"Authorization": f"Bearer {token}"}
            ) as client,
            client.stream(
                "GET", "/api/v1/namespaces/default/pods", params={"watch": "true"}, timeout=60
            ) as watch,
        ):
            assert watch.status_code == 200
            started.process.send_signal(signal.SIGINT)
            # the stream ends whole (its last chunk sent): cut off at the graceful
            # timeout instead, reading it raises "incomplete chunked read"
            assert list(watch.iter_lines()) == []
            started.process.communicate(timeout=30)
    assert started.process.returncode == 0


def test_a_second_up_on_the_same_data_dir_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with allot_up(tmp_path) as first:
        before = snapshot(tmp_path)
        second = subprocess.run(
            [ALLOT, "up", "--port", "0", "--data-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60, env=CLEAN_ENV, check=False,
        )  # fmt: skip
        assert second.returncode == 1
        assert second.stderr == (
            f"error: the platform in {tmp_path} is already running at {first.url} "
            f"(pid {first.process.pid}); stop it first or choose another --data-dir\n"
        )
        assert second.stdout == ""
        assert snapshot(tmp_path) == before  # the first one's kubeconfigs are untouched
        assert version_of(tmp_path / "kubeconfigs" / "host.yaml")["major"] == "1"
    # once the first one stops, the directory is free again
    with allot_up(tmp_path) as again:
        assert again.url.startswith("https://127.0.0.1:")


def test_a_restart_keeps_the_tenant_context_connect_wrote_into_the_host_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's flow (``export KUBECONFIG=$(allot kubeconfig --path)``, then ``allot
    tenant connect``) survives Ctrl-C and ``allot up`` again, on a new port: kubectl still
    talks to the tenant, platform commands to the host, and disconnect switches back; the
    context of a tenant deleted on the host (kubectl) goes at the next start, and the
    banner says so."""
    host = tmp_path / "kubeconfigs" / "host.yaml"
    monkeypatch.setenv("KUBECONFIG", str(host))
    data = ["--data-dir", str(tmp_path)]
    context = f"allot_legal-ai_{tmp_path.name}"

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(Path(sys.executable).with_name("kubectl")), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    with allot_up(tmp_path):
        assert allot(["tenant", "create", "legal-ai", *data]) == 0
        assert allot(["tenant", "connect", "legal-ai", *data]) == 0
        capsys.readouterr()
        assert allot(["tenant", "list", *data]) == 0  # the host, though a tenant is current
        assert "legal-ai" in capsys.readouterr().out
    with allot_up(tmp_path) as again:
        assert "note:" not in again.banner
        assert kubectl("config", "current-context").stdout.strip() == context
        server = kubectl("config", "view", "--minify", "-o", "jsonpath={..server}").stdout
        assert server == f"{again.url}/clusters/legal-ai"
        assert kubectl("get", "namespace", "default").returncode == 0
        capsys.readouterr()
        assert allot(["tenant", "disconnect", *data]) == 0
        assert f'Left context "{context}"; switched to context "allot-host".' in (
            capsys.readouterr().out
        )
        assert allot(["tenant", "connect", "legal-ai", *data]) == 0
        deleted = kubectl("--context", "allot-host", "delete", "tenant", "legal-ai")
        assert deleted.returncode == 0, deleted.stderr  # not allot tenant delete: it would
        assert kubectl("config", "current-context").stdout.strip() == context  # drop it too
    with allot_up(tmp_path) as last:
        assert (
            f'  note: {host.resolve()}: context "{context}" was current, but tenant legal-ai '
            'no longer exists; the current context is now "allot-host"'
        ) in last.banner
        assert kubectl("config", "get-contexts", "-o", "name").stdout.split() == ["allot-host"]


def test_a_port_in_use_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [ALLOT, "up", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            capture_output=True, text=True, timeout=60, env=CLEAN_ENV, check=False,
        )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == (
        f"error: cannot serve on 127.0.0.1:{port}: Address already in use "
        "(choose another with --port, or --port 0 for a free one)\n"
    )
    assert result.stdout == ""
    assert not (tmp_path / "data").exists()  # not even the lock file is left behind


@pytest.mark.parametrize(
    "argv",
    [
        ["tenant", "list"],
        ["tenant", "create", "team-a"],
        ["tenant", "delete", "team-a"],
        ["alerts"],
        ["top", "--once"],
        ["fleet", "scale", "a100-whole-pool", "2"],
    ],
)
def test_commands_say_the_platform_is_not_running(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert allot([*argv, "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert (
        f"error: the platform in {tmp_path} is not running "
        f"(start it with: allot up --data-dir {tmp_path})\n"
    ) in err
    assert "Traceback" not in err


def test_a_stopped_platform_with_kubeconfigs_left_is_not_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with allot_up(tmp_path):
        pass
    assert (tmp_path / "kubeconfigs" / "host.yaml").exists()
    assert allot(["tenant", "list", "--data-dir", str(tmp_path)]) == 1
    assert "is not running" in capsys.readouterr().err
    assert allot(["kubeconfig", "nosuch", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: no kubeconfig for cluster 'nosuch' in {tmp_path} "
        "(clusters: host; a tenant's comes with: allot tenant create)\n"
    )
    assert allot(["kubeconfig", "--data-dir", str(tmp_path / "empty")]) == 1
    assert "(start the platform first: allot up --data-dir" in capsys.readouterr().err
    host = str(tmp_path / "kubeconfigs" / "host.yaml")
    platform = str(REPO / "examples" / "platform" / "seed-000.yaml")
    for argv, code in ((["doctor"], 2), (["apply", "-f", platform], 1)):
        assert allot([*argv, "--kubeconfig", host]) == code
        err = capsys.readouterr().err
        assert err.startswith("error: the connection to the server 127.0.0.1:")
        assert "was refused - did you specify the right host or port?" in err
        assert "Max retries" not in err


def test_the_data_dir_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ALLOT_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert allot(["tenant", "list"]) == 1
    assert f"{tmp_path}/home/.local/state/allot is not running" in capsys.readouterr().err
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert allot(["alerts"]) == 1
    assert f"{tmp_path}/state/allot is not running" in capsys.readouterr().err
    monkeypatch.setenv("ALLOT_DATA_DIR", str(tmp_path / "explicit"))
    assert allot(["top", "--once"]) == 1
    assert f"{tmp_path}/explicit is not running" in capsys.readouterr().err
    assert allot(["tenant", "list", "--data-dir", str(tmp_path / "flag")]) == 1
    assert f"{tmp_path}/flag is not running" in capsys.readouterr().err


def test_local_gpus_without_the_gpu_extra_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    fleet = REPO / "examples" / "fleets" / "local-gpus.yaml"
    code = allot(["up", "--fleet", str(fleet), "--port", "0", "--data-dir", str(tmp_path)])
    assert code == 1
    captured = capsys.readouterr()
    assert captured.err == (
        "error: this fleet publishes this machine's GPUs, which needs nvidia-ml-py: "
        "pip install nvidia-ml-py (in a clone of allot: pip install -e '.[gpu]')\n"
    )
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []  # no half-started server, nothing written


@pytest.mark.slow
def test_a_fresh_virtualenv_without_extras_runs_allot(tmp_path: Path) -> None:
    """``pip install .`` alone is enough for the CLI, validation and the platform."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(REPO)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    fresh = str(venv / "bin" / "allot")
    version = subprocess.run([fresh, "--version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("allot ")
    manifest = REPO / "examples" / "seeds" / "000-gpu-deviceclasses.yaml"
    validated = subprocess.run(
        [fresh, "validate", str(manifest)], capture_output=True, text=True, check=False
    )
    assert validated.returncode == 0, validated.stderr
    assert "deviceclass.resource.k8s.io/gpu-whole valid" in validated.stdout
    with allot_up(tmp_path / "data", allot_bin=fresh):
        assert version_of(tmp_path / "data" / "kubeconfigs" / "host.yaml")["major"] == "1"


def test_real_cluster_commands_follow_kubeconfig_and_context_as_kubectl(
    cluster: Cluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``$KUBECONFIG`` files are merged, the first file's current context wins, and
    ``--kubeconfig``/``--context`` override both, as kubectl does."""
    host = yaml.safe_load(cluster.kubeconfig.read_text())
    names = {"cluster": host["clusters"][0]["name"], "user": host["users"][0]["name"]}
    good = {**host, "contexts": [{"name": "good", "context": names}], "current-context": "good"}
    broken = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "nobody", "user": {"token": "x"}}],
        "contexts": [{"name": "broken", "context": {"cluster": "gone", "user": "nobody"}}],
        "current-context": "broken",
    }
    first, second = tmp_path / "broken.yaml", tmp_path / "good.yaml"
    first.write_text(yaml.safe_dump(broken))
    second.write_text(yaml.safe_dump(good))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert allot(["doctor", "-o", "json"]) == 2  # the first file's current context: broken
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert len(err.strip().splitlines()) == 1
    assert allot(["doctor", "--context", "good", "-o", "json"]) == 0  # merged from the second
    assert "summary" in capsys.readouterr().out
    assert allot(["doctor", "--kubeconfig", str(second), "-o", "json"]) == 0
    capsys.readouterr()
    assert allot(["doctor", "--kubeconfig", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot load kubeconfig" in capsys.readouterr().err


def test_secrets_at_rest_are_the_owners_alone(tmp_path: Path) -> None:
    """The data directory is 0700 and every file in it 0600: kubeconfigs, tokens, the
    server key, the store, logs (as ``allot up`` leaves them after a first run)."""
    data_dir = tmp_path / "data"
    with allot_up(data_dir) as started:
        assert version_of(data_dir / "kubeconfigs" / "host.yaml")["gitVersion"]
        assert started.url
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"host.yaml", "tokens.json", "server.key", "state.db"} <= names
    loose = {str(p.relative_to(data_dir)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert {path: mode for path, mode in loose.items() if mode != "0o600"} == {}


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_banner_says_how_pods_are_confined(tmp_path: Path) -> None:
    with allot_up(tmp_path / "data", "--runtime", "process") as started:
        assert "pods run sandboxed (bubblewrap); " in started.banner
        assert "limits: " in started.banner


def test_kubeconfig_wait_waits_for_a_starting_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``allot up &`` then ``export KUBECONFIG=$(allot kubeconfig --path --wait)``: the
    path comes once the platform serves (its fleet published), not before; with nothing
    starting, the wait ends in an error naming the data directory, and a kubeconfig left by
    a stopped platform is not taken for a served one."""
    with allot_up(tmp_path):
        assert allot(["kubeconfig", "--path", "--wait", "5", "--data-dir", str(tmp_path)]) == 0
        assert capsys.readouterr().out.strip() == str(tmp_path / "kubeconfigs" / "host.yaml")
    started = time.monotonic()
    assert allot(["kubeconfig", "--path", "--wait", "0.5", "--data-dir", str(tmp_path)]) == 1
    assert time.monotonic() - started >= 0.5
    assert capsys.readouterr().err == (
        f"error: no platform served cluster 'host' from {tmp_path} within 0.5s "
        f"(start it with: allot up --data-dir {tmp_path})\n"
    )


def test_the_fleet_line_counts_what_a_restart_keeps(tmp_path: Path) -> None:
    """A restart publishes nothing new (the slices are there): the banner still says how
    many slices and devices the platform has, and that none is new."""
    pattern = re.compile(
        r"(\d+) node\(s\) added, (\d+) removed; (\d+) slice\(s\) with (\d+) device\(s\) "
        r"published \((\d+) new\)$"
    )

    def counts(started: Started) -> tuple[int, ...]:
        found = pattern.search(started.banner.split("fleet: ", 1)[1].splitlines()[0])
        assert found is not None, started.banner
        return tuple(int(n) for n in found.groups())

    with allot_up(tmp_path) as first:
        added, removed, slices, devices, new = counts(first)
    assert (added > 0, removed, new) == (True, 0, slices)
    with allot_up(tmp_path) as again:
        assert counts(again) == (0, 0, slices, devices, 0)
