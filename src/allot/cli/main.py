"""Entry point of the ``allot`` command: argument parsing and the no-traceback guarantee.

Each subcommand lives in its own module with ``register(subparsers)`` and a ``run(args)``
returning the exit code. Any error that escapes a subcommand is printed as one line on
standard error with exit code 2, never as a traceback (set ``ALLOT_DEBUG=1`` to see it).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from allot import __version__
from allot.cli import cluster, lint, ops, simulate, tenant, up, validate
from allot.cli.options import resolve_data_dir


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


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _all_parsers(sub)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="allot",
        description="GPU entitlements for multi-tenant Kubernetes DRA.",
        epilog="Exit codes: 0 fine; 1 findings, failed checks or a failed operation (the "
        "platform not running, a port in use); 2 bad usage or unreadable input.",
    )
    parser.add_argument("--version", action="version", version=f"allot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate.register(subparsers)
    simulate.register(subparsers)
    lint.register(subparsers)
    up.register(subparsers)
    tenant.register(subparsers)
    ops.register(subparsers)
    cluster.register(subparsers)
    for each in _all_parsers(parser):
        each.formatter_class = DefaultsHelpFormatter
        each.set_defaults(usage_parser=each)  # the deepest one wins: errors show its usage
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in words:  # everything after `--` is a command to run (`allot tenant connect`)
        passthrough = words[words.index("--") + 1 :]
        words = words[: words.index("--")]
    args, unknown = parser.parse_known_args(words)
    if unknown:  # said with the subcommand's usage, as `allot validate --help` shows it
        args.usage_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.passthrough = passthrough
    resolve_data_dir(args)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except Exception as err:  # the last line of defence: one clear line, no traceback
        if os.environ.get("ALLOT_DEBUG"):
            traceback.print_exc()
        print(
            f"error: internal error in allot {args.command}: {type(err).__name__}: {err}",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
