"""``allot tenant create`` and ``connect`` take vcluster's flags with vcluster's meaning
(``allot.cli.vclusterflags``); these are the answers that need no running platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from allot.cli.main import main as allot
from allot.cli.vclusterflags import go_bool

SEED_VALUES = "examples/seeds/000-legal-ai-vcluster-config.yaml"


def _run(argv: list[str], data: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = allot([*argv, "--data-dir", str(data)])
    return code, capsys.readouterr().err


def test_the_seeds_create_flags_are_accepted_and_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 000's ``vcluster create`` line, verbatim but for the command: it gets as far as
    the platform (not running here), after one line naming what it ignores."""
    argv = ["tenant", "create", "legal-ai", "--driver", "platform", "--project", "default",
            "--cluster", "loft-cluster", "--values", SEED_VALUES, "--connect=false"]  # fmt: skip
    code, err = _run(argv, tmp_path, capsys)
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == (
        "note: ignored --driver platform --project default --cluster loft-cluster: allot "
        "serves every tenant itself (it is the one driver), on one host cluster without "
        "vCluster Platform projects"
    )
    assert lines[1].startswith(f"error: the platform in {tmp_path} is not running")
    assert len(lines) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--project", "default"],
            "error: Following platform flags have been set, which won't have any effect when "
            "using driver type helm: --project",
        ),
        (
            ["--driver", "helm", "--cluster", "c"],
            "driver type helm: --cluster",
        ),
        (
            ["-n", "legal-ai"],
            "error: allot keeps tenant legal-ai in host namespace tenant-legal-ai, not "
            "legal-ai: -n is the host namespace, as for vcluster create (use -n "
            "tenant-legal-ai or leave -n out)",
        ),
    ],
)
def test_create_refuses_what_vcluster_would_not_do_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, err = _run(["tenant", "create", "legal-ai", *argv], tmp_path, capsys)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_tenant_document_is_not_merged_with_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text("apiVersion: allot.dev/v1alpha1\nkind: Tenant\nmetadata: {name: x}\n")
    argv = ["tenant", "create", "x", "-f", SEED_VALUES, "--values", str(tenant)]
    code, err = _run(argv, tmp_path, capsys)
    assert code == 2
    assert err == (
        f"error: {SEED_VALUES}, {tenant}: a Tenant document cannot be merged with other files: "
        "give it alone\n"
    )


def test_create_accepts_the_host_namespace_it_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(["tenant", "create", "legal-ai", "-n", "tenant-legal-ai"], tmp_path, capsys)
    assert code == 1  # past the flags, to the platform, which is not running
    assert "is not running" in err


def test_connect_namespace_is_the_host_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vcluster connect NAME -n NS`` finds NAME in host namespace NS: the seed's
    ``--namespace legal-ai`` names no namespace allot keeps the tenant in."""
    kubeconfigs = tmp_path / "kubeconfigs"
    kubeconfigs.mkdir()
    (kubeconfigs / "legal-ai.yaml").write_text("apiVersion: v1\nkind: Config\n")
    code, err = _run(["tenant", "connect", "legal-ai", "--namespace", "legal-ai"], tmp_path, capsys)
    assert code == 1
    assert err == (
        "error: couldn't find vcluster legal-ai in namespace legal-ai: -n is the host "
        "namespace the tenant lives in, as for vcluster connect, and tenant legal-ai lives in "
        "tenant-legal-ai (use -n tenant-legal-ai or leave -n out; --context-namespace NS sets "
        "the context's namespace)\n"
    )
    argv = ["tenant", "connect", "legal-ai", "-n", "tenant-legal-ai", "--print"]
    assert allot([*argv, "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "apiVersion: v1\nkind: Config\n"


@pytest.mark.parametrize(
    ("text", "value"), [("true", True), ("1", True), ("T", True), ("False", False), ("0", False)]
)
def test_connect_takes_a_go_bool(text: str, value: bool) -> None:
    assert go_bool(text) is value


def test_a_bad_go_bool_is_refused_as_pflag_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        allot(["tenant", "create", "x", "--connect=maybe", "--data-dir", str(tmp_path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert 'argument --connect: strconv.ParseBool: parsing "maybe": invalid syntax' in err
