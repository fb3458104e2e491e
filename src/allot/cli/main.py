"""Entry point of the ``allot`` command: argument parsing and the no-traceback guarantee.

Each subcommand lives in its own module with ``register(subparsers)`` and a ``run(args)``
returning the exit code. Only the module of the command named on the line is imported
(:data:`COMMANDS`), so ``allot simulate`` does not pay for the API server, the Kubernetes
client or rich; ``--help``, a misspelled command and no command build the whole parser.
Any error that escapes a subcommand is printed as one line on
standard error with exit code 2, never as a traceback (set ``ALLOT_DEBUG=1`` to see it).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from allot import __version__
from allot.cli.options import resolve_data_dir

# Each CLI module, in the order `allot --help` lists them, with the commands it registers.
COMMANDS: dict[str, tuple[str, ...]] = {
    "validate": ("validate",),
    "simulate": ("simulate", "explain"),
    "lint": ("lint",),
    "up": ("up", "fleet", "kubeconfig"),
    "tenant": ("tenant",),
    "ops": ("alerts", "audit", "usage", "top"),
    "cluster": ("render", "apply", "controller"),
    "doctor": ("doctor",),
}

BATCH_COMMANDS = frozenset({"validate", "simulate", "explain", "lint", "doctor", "render"})
BATCH_GC_THRESHOLDS = (100_000, 50, 100)
"""Commands that read their input, work and exit collect the young generation every
100,000 net allocations instead of 700: decoding a large scenario or dump makes millions of
objects that live until the end, and each collection walked them again (the 100-node
DynamicMIG scenario's first claim: 7.7-9.0 s -> 4.7 s); the caller's thresholds come back
when the command returns. Long-running commands keep the defaults until ``allot up``'s
server settles its heap (``allot.apiserver.server``)."""


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Adds ``(default: X)`` to a flag's help unless the help already names its default or
    the default is empty (None, False, []): every flag says what happens without it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, [], argparse.SUPPRESS)
            or not (action.option_strings or action.nargs in ("?", "*"))
        ):
            return text
        return f"{text} (default: %(default)s)"


PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugins() -> Iterable[object]:
    return ()


def skip_pydantic_plugin_discovery() -> None:
    """allot's commands run without pydantic plugins: they have none to load, yet pydantic
    looks for them when it builds its first validator, importing ``importlib.metadata``
    and reading every installed distribution's entry points (30 of the 200 ms of a 10-node
    ``allot simulate``, issue 28). Its loader module is put in place before pydantic
    imports it; where pydantic has imported it already, nothing changes."""
    if PYDANTIC_PLUGIN_LOADER not in sys.modules:
        loader = types.ModuleType(PYDANTIC_PLUGIN_LOADER, "allot's commands load no plugins")
        loader.__dict__["get_plugins"] = _no_plugins
        sys.modules[PYDANTIC_PLUGIN_LOADER] = loader


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _all_parsers(sub)
    return found


def _modules_for(command: str | None) -> list[str]:
    """The CLI modules to register: the one owning ``command``, none for ``--version`` (it
    prints and exits before any command is parsed: 0.57 s -> 0.03 s, issue 28), or all when
    it is none of theirs (help, a misspelled command, or no command)."""
    if command == "--version":
        return []
    owners = [module for module, names in COMMANDS.items() if command in names]
    return owners or list(COMMANDS)


@contextmanager
def _imports_kept() -> Iterator[None]:
    """Import without cyclic garbage collection, then freeze what the imports made.

    Modules, classes and pydantic's field tables live until the process ends, yet every
    collection during the imports walked all of them again (a tenth of ``allot simulate``'s
    start-up, issue 15). Frozen objects are left out of later collections as well (what the
    ``gc.freeze`` documentation advises for long-lived start-up state); the price is that
    the few garbage cycles an import leaves behind stay in memory.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


@contextmanager
def _collection_for(command: str) -> Iterator[None]:
    """A batch command's collector thresholds for its run, the caller's again after it
    (the demo and the tests run commands inside their own process)."""
    if command not in BATCH_COMMANDS:
        yield
        return
    previous = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``allot``: with ``command``, only the module owning it is imported."""
    parser = argparse.ArgumentParser(
        prog="allot",
        description="GPU entitlements for multi-tenant Kubernetes DRA.",
        epilog="Exit codes: 0 fine; 1 findings, failed checks or a failed operation (the "
        "platform not running, a port in use); 2 bad usage or unreadable input.",
    )
    parser.add_argument("--version", action="version", version=f"allot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    with _imports_kept():
        for module in _modules_for(command):
            importlib.import_module(f"allot.cli.{module}").register(subparsers)
    for each in _all_parsers(parser):
        each.formatter_class = DefaultsHelpFormatter
        each.set_defaults(usage_parser=each)  # the deepest one wins: errors show its usage
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    skip_pydantic_plugin_discovery()
    words = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in words:  # everything after `--` is a command to run (`allot tenant connect`)
        passthrough = words[words.index("--") + 1 :]
        words = words[: words.index("--")]
    parser = build_parser(words[0] if words else None)  # `allot` has no option taking a value
    args, unknown = parser.parse_known_args(words)
    if unknown:  # said with the subcommand's usage, as `allot validate --help` shows it
        args.usage_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.passthrough = passthrough
    resolve_data_dir(args)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        with _collection_for(args.command):
            code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except Exception as err:  # the last line of defence: one clear line, no traceback
        if os.environ.get("ALLOT_DEBUG"):
            import traceback  # only here: it costs start-up on every run (issue 15)

            traceback.print_exc()
        print(
            f"error: internal error in allot {args.command}: {type(err).__name__}: {err}",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
