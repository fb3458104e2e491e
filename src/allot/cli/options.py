"""Options every command shares: where the platform's state lives, which real cluster to use.

One rule for the data directory, used by every subcommand that reads or serves a platform:
``--data-dir``, else ``$ALLOT_DATA_DIR``, else ``$XDG_STATE_HOME/allot`` (``~/.local/state/
allot`` when that is unset), the XDG place for state that survives restarts but is not
configuration. The default is resolved when the command runs, not when the parser is built,
so the environment of the call decides. Commands for real clusters take ``--kubeconfig`` and
``--context`` and otherwise do what kubectl does: ``$KUBECONFIG`` (a colon-separated list,
merged), else ``~/.kube/config``, in its current context.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DATA_DIR_ENV = "ALLOT_DATA_DIR"
DATA_DIR_HELP = (
    "the platform's state: kubeconfigs, store, audit log "
    f"(default: ${DATA_DIR_ENV}, else $XDG_STATE_HOME/allot, i.e. ~/.local/state/allot)"
)


def default_data_dir() -> Path:
    """``$ALLOT_DATA_DIR``, else the per-user state directory."""
    if explicit := os.environ.get(DATA_DIR_ENV):
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "allot"


def add_data_dir(
    parser: argparse.ArgumentParser, help_text: str = DATA_DIR_HELP, subdir: str = ""
) -> None:
    """``--data-dir``; ``subdir`` puts this command's default below the shared one."""
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help=help_text)
    parser.set_defaults(data_dir_subdir=subdir)


def resolve_data_dir(args: argparse.Namespace) -> None:
    """Fill in the default data directory after parsing (see the module docstring)."""
    if getattr(args, "data_dir", False) is None:
        args.data_dir = default_data_dir() / getattr(args, "data_dir_subdir", "")


def add_kubeconfig(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        metavar="FILE",
        help="kubeconfig of the cluster (default: $KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument(
        "--context",
        default=None,
        help="kubeconfig context to use (default: the kubeconfig's current context)",
    )


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0 (a refresh interval, a timeout)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not seconds > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}")
    return seconds


def quota_percent(text: str) -> int:
    """An argparse type: the share of a quota an alert fires at, 1 to 100 per cent."""
    try:
        percent = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid whole number: {text!r}") from None
    if not 1 <= percent <= 100:
        raise argparse.ArgumentTypeError(f"must be between 1 and 100, not {text!r}")
    return percent
