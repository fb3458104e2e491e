"""Every flag of every ``allot`` command has help and says its default, as kubectl's do."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from allot.cli.main import DefaultsHelpFormatter, build_parser, main

Entry = tuple[str, argparse.ArgumentParser, argparse.Action]


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[Entry]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, parser, action


ENTRIES = list(_walk(build_parser(), "allot"))


def _label(entry: Entry) -> str:
    path, _, action = entry
    return f"{path} {'/'.join(action.option_strings) or action.dest}"


def test_the_walk_sees_every_command() -> None:
    commands = {path for path, _, _ in ENTRIES}
    assert {"allot up", "allot tenant connect", "allot tenant disconnect", "allot doctor",
            "allot alerts", "allot audit", "allot usage", "allot validate"} <= commands  # fmt: skip
    assert len(ENTRIES) > 60


@pytest.mark.parametrize("entry", ENTRIES, ids=[_label(e) for e in ENTRIES])
def test_every_argument_has_help_that_shows_its_default(entry: Entry) -> None:
    _, parser, action = entry
    assert action.help, "no help text"
    formatter = parser.formatter_class(prog=parser.prog)
    assert isinstance(formatter, DefaultsHelpFormatter)
    shown = formatter._get_help_string(action) or ""
    if action.default not in (None, False, []) and action.option_strings:
        assert "default" in shown
        if "%(default)s" in shown:
            assert str(action.default) in shown % {"default": action.default}


@pytest.mark.parametrize(
    "argv", [["tenant", "list", "-o", "xml"], ["nope"], ["up", "--port", "many"]]
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "usage: allot" in capsys.readouterr().err


def test_every_listing_command_offers_the_kubectl_formats() -> None:
    listing = {"allot tenant list", "allot alerts", "allot audit", "allot usage"}
    for path, _, action in ENTRIES:
        if path in listing and "--output" in action.option_strings:
            assert action.choices is not None
            assert {"table", "wide", "json", "yaml"} <= set(action.choices)
            listing.discard(path)
    assert listing == set()


@pytest.mark.parametrize(
    ("argv", "usage", "unknown"),
    [
        (["validate", "--outptu", "json", "x.yaml"], "usage: allot validate ", "--outptu"),
        (["tenant", "connect", "--bogus", "team-a"], "usage: allot tenant connect ", "--bogus"),
        (["tenant", "list", "extra"], "usage: allot tenant list ", "extra"),
        (["--bogus"], "usage: allot [-h]", "--bogus"),
    ],
)
def test_a_misspelled_flag_shows_the_usage_of_its_command(
    argv: list[str], usage: str, unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert err.endswith(f": error: unrecognized arguments: {unknown}\n")


COMMANDS = {path.split()[-1] for path, _, _ in ENTRIES}


@pytest.mark.parametrize("entry", ENTRIES, ids=[_label(e) for e in ENTRIES])
def test_help_describes_only_its_own_command(entry: Entry) -> None:
    path, _, action = entry
    own = path.split()[-1]
    others = {c for c in COMMANDS - {own} if f"({c}: " in (action.help or "")}
    assert not others, f"help speaks of another command: {others}"


def test_simulate_and_explain_describe_their_own_scenario_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    helps = {}
    for command in ("simulate", "explain"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        helps[command] = " ".join(capsys.readouterr().out.split())
    assert "SCENARIO YAML or JSON file, or -" in helps["simulate"]
    assert "pod/NAME" not in helps["simulate"]
    assert "or pod/NAME or resourceclaim/NAME of a running platform's tenant" in helps["explain"]
