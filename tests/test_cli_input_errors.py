"""Unreadable input is one line and exit code 2 for every command that reads a file, in the
words kubectl uses (``the path "X" does not exist``, ``error converting YAML to JSON``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from allot.cli.main import main as allot

COMMANDS = [
    ["validate", "{file}"],
    ["lint", "{file}"],
    ["simulate", "{file}"],
    ["render", "-f", "{file}", "--out", "{tmp}/out"],
    ["apply", "-f", "{file}", "--kubeconfig", "{tmp}/none"],
    ["doctor", "--from-dump", "{file}"],
    ["up", "--fleet", "{file}", "--data-dir", "{tmp}/data"],
    ["tenant", "create", "team-a", "-f", "{file}", "--data-dir", "{tmp}/data"],
]


def _argv(template: list[str], file: Path, tmp: Path) -> list[str]:
    return [word.format(file=file, tmp=tmp) for word in template]


@pytest.mark.parametrize("template", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_file(
    template: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    assert allot(_argv(template, missing, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert f'the path "{missing}" does not exist\n' in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("template", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_malformed_yaml(
    template: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("items: [\n")
    assert allot(_argv(template, broken, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert f'error parsing "{broken}": error converting YAML to JSON: yaml: line 2: ' in err
    assert len(err.splitlines()) == 1
    assert "<unicode string>" not in err
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ["a: {b: 1\nc: d\n", "- [1, 2\n", "key: 'open\n"])
def test_every_command_words_a_yaml_error_alike(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(text)
    said = set()
    for template in COMMANDS:
        assert allot(_argv(template, broken, tmp_path)) == 2, template
        said.add(capsys.readouterr().err)
    assert len(said) == 1, said  # libyaml's words (the fast readers) never show through


def test_doctor_refuses_a_dump_without_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in (("empty.yaml", ""), ("blank.yaml", "---\n---\n")):
        dump = tmp_path / name
        dump.write_text(text)
        assert allot(["doctor", "--from-dump", str(dump)]) == 2
        assert capsys.readouterr().err == (
            f'error: "{dump}" holds no objects (a dump is what `kubectl get ... -A -o yaml` '
            "prints)\n"
        )


@pytest.mark.parametrize(
    "command", [["render", "--out", "{tmp}/out"], ["apply", "--kubeconfig", "{tmp}/none"]]
)
def test_render_and_apply_refuse_a_platform_file_without_objects(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Applied with pruning, an empty platform file would remove every tenant's objects."""
    empty = tmp_path / "platform.yaml"
    empty.write_text("---\n# nothing yet\n")
    argv = [word.format(tmp=tmp_path) for word in command]
    assert allot([*argv, "-f", str(empty)]) == 2
    assert capsys.readouterr().err == f'error: "{empty}" holds no DeviceClass and no Tenant\n'
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("interval", ["-1", "0", "nan", "soon"])
def test_top_refuses_an_interval_that_is_no_positive_number(
    interval: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad usage (exit 2) before the platform is asked, not a frame and then an internal
    error from ``sleep``, nor a loop that asks the platform as fast as it can."""
    with pytest.raises(SystemExit) as exited:
        allot(["top", "--interval", interval, "--data-dir", str(tmp_path)])
    assert exited.value.code == 2
    assert "argument --interval:" in capsys.readouterr().err


@pytest.mark.parametrize("percent", ["0", "150", "-5", "ninety"])
def test_up_refuses_a_quota_alert_share_outside_1_to_100(
    percent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A share above 100 would never fire, 0 or less would fire for every quota: bad
    usage (exit 2), before the data directory is made."""
    with pytest.raises(SystemExit) as exited:
        allot(["up", "--alert-quota-percent", percent, "--data-dir", str(tmp_path / "data")])
    assert exited.value.code == 2
    assert "argument --alert-quota-percent:" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()
