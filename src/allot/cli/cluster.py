"""``allot render``: a real host cluster's manifests from a platform file.

``allot render [-f PLATFORM_FILE] [--out DIR]`` reads DeviceClasses and Tenants (default
``allot-platform.yaml``) and writes the files described in :mod:`allot.cluster.render`,
printing each path; bad input is one clear line and exit 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from allot.cluster.render import PlatformFileError, read_platform, render, write

DEFAULT_PLATFORM = Path("allot-platform.yaml")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("render", help="manifests for a real host cluster")
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_PLATFORM, help="platform file")
    parser.add_argument("--out", type=Path, default=Path("rendered"), help="output folder")
    parser.set_defaults(run=run_render)


def load_platform(path: Path) -> Any:
    """The platform file, parsed and checked; PlatformFileError says what is wrong."""
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except OSError as err:
        raise PlatformFileError(f"{path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise PlatformFileError(f"{path}: not valid YAML: {err}") from None
    return read_platform(documents, str(path))


def run_render(args: argparse.Namespace) -> int:
    try:
        platform = load_platform(args.file)
    except PlatformFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in write(render(platform), args.out):
        print(path)
    return 0
