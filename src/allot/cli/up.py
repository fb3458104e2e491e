"""``allot up`` and ``allot kubeconfig``: run the embedded platform, print kubeconfigs.

``allot up [--data-dir DIR] [--port N]`` serves the host cluster over HTTPS on loopback
in the foreground until Ctrl-C, after printing where each cluster's kubeconfig is.
Restarting on the same data directory keeps every object. ``allot kubeconfig [CLUSTER]``
prints a cluster's kubeconfig (the server must have run once on that data directory).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from allot.apiserver.security import Tokens

DEFAULT_DATA_DIR = Path(".allot")
DEFAULT_PORT = 6443


def register(subparsers: Any) -> None:
    up = subparsers.add_parser(
        "up",
        help="run the embedded platform (host cluster) on loopback",
        description="Serve the host cluster over HTTPS on 127.0.0.1 until Ctrl-C.",
    )
    up.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    up.add_argument("--port", type=int, default=DEFAULT_PORT)
    up.add_argument("--host", default="127.0.0.1", help="a loopback address")
    up.set_defaults(run=run_up)
    kubeconfig = subparsers.add_parser("kubeconfig", help="print a cluster's kubeconfig")
    kubeconfig.add_argument("cluster", nargs="?", default="host")
    kubeconfig.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    kubeconfig.set_defaults(run=run_kubeconfig)


def run_up(args: argparse.Namespace) -> int:
    from allot.apiserver.server import Endpoint, serve

    def announce(endpoint: Endpoint) -> None:
        print(f"allot API server on {endpoint.url} (data in {args.data_dir})")
        for cluster, path in endpoint.kubeconfigs.items():
            print(f"  cluster {cluster}: export KUBECONFIG={path.resolve()}")
        print("Ctrl-C stops it.", flush=True)

    try:
        serve(args.data_dir, args.host, args.port, announce)
    except KeyboardInterrupt:
        pass  # uvicorn has already shut down gracefully and re-raised the signal
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: cannot serve on {args.host}:{args.port}: {err.strerror}", file=sys.stderr)
        return 1
    print("allot API server stopped", flush=True)
    return 0


def run_kubeconfig(args: argparse.Namespace) -> int:
    path = args.data_dir / "kubeconfigs" / f"{args.cluster}.yaml"
    tokens = Tokens(args.data_dir / "tokens.json")
    if args.cluster not in tokens.clusters() or not path.exists():
        print(
            f"error: no kubeconfig for cluster {args.cluster!r} in {args.data_dir} (run "
            "'allot up' first)",
            file=sys.stderr,
        )
        return 1
    sys.stdout.write(path.read_text())
    return 0
