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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="allot", description="GPU entitlements for multi-tenant Kubernetes DRA."
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in words:  # everything after `--` is a command to run (`allot tenant connect`)
        passthrough = words[words.index("--") + 1 :]
        words = words[: words.index("--")]
    args = parser.parse_args(words)
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
