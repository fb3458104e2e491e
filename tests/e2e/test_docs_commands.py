"""Every command in README.md and docs/user-guide.md runs as written.

Each document is run as one bash session, its ```sh blocks in order, the way a reader
copies them: from a scratch copy of the repository's ``examples/`` (with ``.venv`` linked
in), a fresh ``$HOME`` (so the default data directory and ``~/.kube/config`` are new) and
no ``KUBECONFIG`` or ``ALLOT_DATA_DIR``. The conventions the documents follow:

- ```sh blocks run; ```text blocks do not: synopses, sample output, commands that need a
  real cluster or a GPU machine, and the set-up commands (``make demo``, ``make test``:
  this suite is what ``make test`` runs; ``make kube``, whose per-user cache of real
  Kubernetes binaries the session is given). There are no other exceptions.
- In a block with ``$ `` prompts only the prompted lines are commands (the rest is
  output); otherwise every line that is not a comment is one. A trailing ``\\`` continues
  a command on the next line.
- A command's exit status must be 0, or what its trailing comment says (``# exit 1: ...``).
- A command ending in ``&`` runs in the background and the session goes on at once, as a
  pasted block does (the documents wait where they need the platform: ``allot kubeconfig
  --path --wait``); it is sent Ctrl-C when the document ends.

A failure names the document, the line and the command's output.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from allot.kubeengine.binaries import CACHE_ENV, cache_root

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "docs/user-guide.md"]
EXIT = re.compile(r"#\s*exit (\d+)")


@dataclass
class Command:
    line: int  # 1-based line in the document
    text: str
    expected: int
    background: bool


def commands(document: str) -> list[Command]:
    """The runnable commands of a document, in order."""
    lines = document.splitlines()
    found: list[Command] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```sh":
            index += 1
            continue
        end = lines.index("```", index + 1)
        found += _block(lines[index + 1 : end], index + 2)
        index = end + 1
    return found


def _block(block: list[str], first: int) -> list[Command]:
    prompted = any(line.startswith("$ ") for line in block)
    found = []
    position = 0
    while position < len(block):
        line, number = block[position], first + position
        position += 1
        if prompted and not line.startswith("$ "):
            continue
        text = line[2:] if prompted else line
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        while text.rstrip().endswith("\\") and position < len(block):
            text = text.rstrip()[:-1].rstrip() + " " + block[position].strip()
            position += 1
        found.append(_command(number, text))
    return found


def _command(number: int, text: str) -> Command:
    code, comment = text, ""
    if " #" in text:
        code, comment = text.split(" #", 1)
    expected = EXIT.search("#" + comment)
    code = code.rstrip()
    background = code.endswith("&") and not code.endswith("&&")
    if background:
        code = code[:-1].rstrip()
    return Command(number, code, int(expected.group(1)) if expected else 0, background)


def script(items: list[Command], logs: Path) -> str:
    """One bash session that runs the commands and stops at the first surprise."""
    lines = [
        "set -u",
        # a background job is a subshell: stop what it runs (allot up) and wait for it
        "trap 'for p in $(jobs -p); do pkill -TERM -P $p; done; wait' EXIT",
    ]
    for number, item in enumerate(items):
        lines.append(f"echo '@@@ {number}'")
        if item.background:
            log = shlex.quote(str(logs / f"background-{number}.log"))
            lines.append(f"{{ {item.text} ; }} > {log} 2>&1 &")
            continue
        lines += [
            f"{{ {item.text} ; }} 2>&1",
            "rc=$?",
            f'[ $rc -eq {item.expected} ] || {{ echo "@@@ failed {number} exit $rc"; exit 98; }}',
        ]
    lines.append("echo '@@@ done'")
    return "\n".join(lines) + "\n"


def _workspace(root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    shutil.copytree(REPO / "examples", work / "examples")
    (work / ".venv").symlink_to(REPO / ".venv")
    return work


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_command_of_the_document_runs_as_written(name: str, tmp_path: Path) -> None:
    items = commands((REPO / name).read_text())
    assert len(items) >= 10, "the document lost its commands"
    work = _workspace(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "ALLOT_DATA_DIR", "ALLOT_PORT", "XDG_STATE_HOME", "VIRTUAL_ENV")
    }
    environment["HOME"] = str(tmp_path / "home")
    # `allot up` as written, on a port of its own: 6443 may be another platform's here
    environment["ALLOT_PORT"] = str(_free_port())
    # the reader has run `make kube` (a set-up command): its per-user cache is this user's
    environment[CACHE_ENV] = str(cache_root())
    session = subprocess.Popen(
        ["bash", "-c", script(items, logs)],
        cwd=work,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # so that nothing it started outlives the test
    )
    try:
        output, _ = session.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)
        session.wait()
    if "@@@ done" in output:
        return
    failed = re.search(r"@@@ failed (\d+) (.*)", output)
    assert failed is not None, output[-4000:]
    item = items[int(failed.group(1))]
    section = output.split(f"@@@ {failed.group(1)}\n", 1)[-1].split("@@@ failed")[0]
    pytest.fail(
        f"{name}:{item.line}: `{item.text}` {failed.group(2)} (expected exit {item.expected})"
        f"\n{section[-3000:]}"
    )


def test_the_conventions_are_read_as_documented() -> None:
    document = "\n".join(
        [
            "```sh",
            "$ allot lint a.yaml   # exit 1: findings",
            "output line",
            "$ allot up --port 0 &",
            "```",
            "```text",
            "allot controller --kubeconfig prod.yaml",
            "```",
            "```sh",
            "# a comment",
            "allot tenant create x \\",
            "    --quota a=1",
            "```",
        ]
    )
    assert [(c.line, c.text, c.expected, c.background) for c in commands(document)] == [
        (2, "allot lint a.yaml", 1, False),
        (4, "allot up --port 0", 0, True),
        (11, "allot tenant create x --quota a=1", 0, False),
    ]


def test_the_user_guide_says_rbac_is_enforced() -> None:
    """Issue 28: the guide said twice that RBAC objects are "stored, not enforced", though
    every cluster authorizes with them (its "Limited rights" section runs the proof)."""
    text = " ".join((REPO / "docs" / "user-guide.md").read_text().split())
    assert "stored, not enforced" not in text
    assert "enforces Kubernetes RBAC on its own" in text
