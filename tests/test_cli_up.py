"""``allot up`` refuses bad options with one clear line before starting anything."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from allot.cli.main import main


def test_bad_driver_feature_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["up", "--data-dir", str(tmp_path), "--driver-feature-gates", "MPSSupport=maybe"])
    assert code == 2
    assert capsys.readouterr().err == (
        "error: --driver-feature-gates: 'MPSSupport=maybe' is not GATE=true or GATE=false\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_consumable_shares_need_the_drivers_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The driver's plugin refuses ``--consumable-shares`` without ``ConsumableShares``;
    so does ``allot up`` for a fleet asking for it, before writing anything."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "driver: {consumableShares: memory}\npools: [{name: h100, nodes: 1, gpu: H100-80GB-HBM3}]\n"
    )
    data = tmp_path / "data"
    assert main(["up", "--data-dir", str(data), "--fleet", str(fleet)]) == 2
    assert capsys.readouterr().err == (
        "error: --consumable-shares requires feature gate ConsumableShares to be enabled\n"
    )
    assert not data.exists()
    fleet.write_text("driver: {consumableShares: most}\npools: [{name: cpu, nodes: 1}]\n")
    assert main(["up", "--data-dir", str(data), "--fleet", str(fleet)]) == 2
    assert capsys.readouterr().err == (
        "error: driver.consumableShares: 'most' is not disabled, memory, unlimited or a "
        "positive number\n"
    )


def test_unknown_runtime_and_placement_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for option, value in (("--runtime", "docker"), ("--placement", "spread")):
        with pytest.raises(SystemExit) as exited:
            main(["up", "--data-dir", str(tmp_path), option, value])
        assert exited.value.code == 2
        assert f"argument {option}: invalid choice: '{value}'" in capsys.readouterr().err


def test_process_runtime_without_bubblewrap_is_refused_with_the_package_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no bwrap on it
    code = main(["up", "--data-dir", str(tmp_path / "data"), "--runtime", "process"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the process runtime runs every container in a bubblewrap")
    assert "apt-get install bubblewrap" in err
    assert "--unsandboxed" in err
    assert not (tmp_path / "data").exists()


def test_unsandboxed_is_for_the_process_runtime_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["up", "--data-dir", str(tmp_path), "--unsandboxed"])
    assert code == 2
    assert capsys.readouterr().err == "error: --unsandboxed applies to --runtime process only\n"
    assert list(tmp_path.iterdir()) == []


def test_a_port_from_the_environment_that_is_not_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for value in ("https", "70000", "-1"):
        monkeypatch.setenv("ALLOT_PORT", value)
        assert main(["up", "--data-dir", str(tmp_path)]) == 2
        assert capsys.readouterr().err == (
            f"error: ALLOT_PORT={value!r}: expected a port number from 0 to 65535\n"
        )
    assert list(tmp_path.iterdir()) == []


def test_the_port_comes_from_the_environment_unless_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$ALLOT_PORT`` is the default of ``--port`` (seen here by the port it finds taken)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("ALLOT_PORT", str(port))
        assert main(["up", "--data-dir", str(tmp_path / "data")]) == 1
        assert f"error: cannot serve on 127.0.0.1:{port}: " in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # not a port: a usage error, not a traceback
        main(["up", "--data-dir", str(tmp_path / "data"), "--port", "-5"])
    assert exited.value.code == 2
    assert "argument --port: expected a port number from 0 to 65535" in capsys.readouterr().err


def test_a_serving_process_freezes_its_start_up_heap_and_collects_less_often() -> None:
    """``settle_heap`` (called by ``allot up`` once the platform is built) in a process of
    its own, as it changes the whole process's collector."""
    script = (
        "import gc; from allot.platform import build; import tempfile, pathlib;"
        "from allot.apiserver.server import GC_THRESHOLDS, settle_heap;"
        "build(pathlib.Path(tempfile.mkdtemp())); before = gc.get_freeze_count();"
        "settle_heap();"
        "print(gc.get_threshold() == GC_THRESHOLDS, gc.get_freeze_count() > before + 10000)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True", "True"]


def test_a_read_only_data_directory_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only filesystem (simulated: this may run as root, whom permissions do not
    stop) refuses the first file a start writes, the data directory's lock."""
    data = tmp_path / "data"
    data.mkdir()
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).startswith(str(data)) and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["up", "--data-dir", str(data), "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        f"error: the data directory {data} is not writable (Read-only file system): allot "
        "keeps its store, tokens and logs there; choose a writable --data-dir (or "
        "$ALLOT_DATA_DIR)\n"
    )
    assert list(data.iterdir()) == []


def test_a_store_that_cannot_be_opened_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    (data / "state.db").mkdir(parents=True)  # not a file SQLite can open
    assert main(["up", "--data-dir", str(data), "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        f"error: the platform's store cannot write: {data / 'state.db'}: unable to open "
        "database file\n"
    )
