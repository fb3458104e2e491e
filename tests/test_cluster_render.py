"""``allot render``: golden files, determinism, and every object valid for allot itself.

Run ``pytest tests/test_cluster_render.py --update-golden`` to regenerate the golden files
after an intended change (then review the diff)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from allot.api.kinds import decode
from allot.cel import SelectorCompiler
from allot.cli.main import main as allot
from allot.cluster.render import PlatformFileError, read_platform, render
from allot.registry.kinds import rules_for
from allot.validation.objects import apply_defaults, validate_create
from allot.validation.resource import ResourceContext
from tests.conftest import EXAMPLES, REPO

GOLDEN = REPO / "tests" / "golden" / "render"
PLATFORM = EXAMPLES / "platform" / "seed-000.yaml"


def _rendered(tmp_path: Path) -> dict[str, str]:
    assert allot(["render", "-f", str(PLATFORM), "--out", str(tmp_path)]) == 0
    return {str(p.relative_to(tmp_path)): p.read_text() for p in sorted(tmp_path.rglob("*.yaml"))}


def test_render_matches_the_golden_files(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    rendered = _rendered(tmp_path)
    if request.config.getoption("--update-golden"):
        for name, text in rendered.items():
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_text(text)
    golden = {str(p.relative_to(GOLDEN)): p.read_text() for p in sorted(GOLDEN.rglob("*.yaml"))}
    assert sorted(rendered) == sorted(golden)
    for name, text in rendered.items():
        assert text == golden[name], f"{name} differs from its golden file (--update-golden)"


def test_render_is_deterministic(tmp_path: Path) -> None:
    assert _rendered(tmp_path / "a") == _rendered(tmp_path / "b")


def test_every_rendered_object_passes_allot_validation() -> None:
    platform = read_platform(yaml.safe_load_all(PLATFORM.read_text()))
    context = ResourceContext(compiler=SelectorCompiler())
    checked = 0
    for rendered in render(platform):
        if rendered.path.startswith("vcluster/"):
            continue
        for obj in rendered.objects:
            if obj["kind"] in ("CustomResourceDefinition", "PrometheusRule"):
                continue
            model = decode(obj)
            apply_defaults(model, rules_for(model))
            assert validate_create(model, context, rules_for(model)) == [], (
                rendered.path,
                obj["metadata"],
            )
            checked += 1
    assert checked >= 12


def test_every_file_says_what_it_is_for(tmp_path: Path) -> None:
    for name, text in _rendered(tmp_path).items():
        assert text.startswith("# "), name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\napiVersion: v1\nmetadata: {name: p}\n", "Pod is not part of a platform file"),
        (
            "apiVersion: allot.dev/v1alpha1\nkind: Tenant\nmetadata: {name: a}\nspec: {bogus: 1}\n",
            'unknown field "spec.bogus"',
        ),
        (
            "apiVersion: allot.dev/v1alpha1\nkind: Tenant\nmetadata: {name: a}\n---\n"
            "apiVersion: allot.dev/v1alpha1\nkind: Tenant\nmetadata: {name: a}\n",
            "Tenant 'a' is defined twice",
        ),
    ],
)
def test_bad_platform_files(text: str, message: str) -> None:
    with pytest.raises(PlatformFileError, match=message):
        read_platform(yaml.safe_load_all(text))


def test_the_cli_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert allot(["render", "-f", str(tmp_path / "none.yaml"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_rendered_files_have_no_yaml_aliases(tmp_path: Path) -> None:
    """Shared values are written out, not as anchors (``&id001``) and aliases."""
    for name, text in _rendered(tmp_path).items():
        assert "&id0" not in text, name
        assert "*id0" not in text, name


NOT_COUNTED = (
    ". Nothing rendered counts GPU memory (ResourceQuota and Kueue count devices); the "
    "embedded platform enforces it itself\n"
)


@pytest.mark.parametrize(
    ("platform", "named"),
    [
        (
            PLATFORM,
            "the GPU-memory quota (spec.quota.gpuMemory) of tenant legal-ai is enforced on a "
            "real cluster only by allot controller --webhook-port",
        ),
        (
            EXAMPLES / "platform" / "fair-sharing.yaml",
            "the GPU-memory share (spec.sharing.gpuMemory) of tenant research-ai is not "
            "enforced on a real cluster yet",
        ),
    ],
)
def test_render_warns_that_gpu_memory_is_not_enforced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], platform: Path, named: str
) -> None:
    """One line on stderr: the files are written as ever, the Tenant keeps the field."""
    assert allot(["render", "-f", str(platform), "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"Warning: {named}{NOT_COUNTED}"
    assert "Warning" not in captured.out


def _tenant(name: str, spec: str) -> str:
    return (
        f"apiVersion: allot.dev/v1alpha1\nkind: Tenant\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )


def test_the_warning_names_every_tenant_and_only_those(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = [
        _tenant("a", "{quota: {gpuMemory: 40Gi}}"),
        _tenant("b", "{quota: {hard: {count/resourceclaims.resource.k8s.io: '2'}}}"),
        _tenant("c", "{quota: {gpuMemory: '0'}}"),
    ]
    path = tmp_path / "platform.yaml"
    path.write_text("---\n".join(documents))
    assert allot(["render", "-f", str(path), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == (
        "Warning: the GPU-memory quota (spec.quota.gpuMemory) of tenants a, c is enforced on "
        f"a real cluster only by allot controller --webhook-port{NOT_COUNTED}"
    )
    header = (tmp_path / "out" / "10-tenant-a.yaml").read_text().split("apiVersion")[0]
    assert "# NOT enforced by these objects: spec.quota.gpuMemory" in header
    assert "allot controller --webhook-port enforces spec.quota.gpuMemory" in header
    assert "NOT enforced" not in (tmp_path / "out" / "10-tenant-b.yaml").read_text()


def test_no_warning_without_gpu_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text(_tenant("b", "{quota: {hard: {count/resourceclaims.resource.k8s.io: '2'}}}"))
    assert allot(["render", "-f", str(path), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""
