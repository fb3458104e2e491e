"""vCluster CLI habits of ``allot tenant create`` and ``allot tenant connect``: vcluster's
flags, meaning what they mean to ``vcluster create`` and ``vcluster connect``.

* ``-n/--namespace NS`` is, as for vcluster (its global flag, read by ``find.GetVCluster``
  and ``create``), the *host* namespace the virtual cluster lives in, not the namespace of
  the context. allot keeps tenant ``T`` in host namespace ``tenant-T``, so ``-n tenant-T``
  is accepted and any other namespace is refused with vcluster's own words (``couldn't
  find vcluster T``) and where the tenant does live. The namespace of the context (what
  allot's ``-n`` set before) is ``allot tenant connect --context-namespace NS``.
* ``--driver helm|platform|docker``, ``--project`` and ``--cluster`` (seed 000's
  ``vcluster create ... --driver platform --project default --cluster loft-cluster``) are
  accepted and ignored, with one line saying so: the embedded platform is the one driver
  and has no vCluster Platform projects or connected clusters. As vcluster does, the
  platform flags without ``--driver platform`` are refused.
* ``--connect[=BOOL]`` (a Go bool: ``true``, ``false``, ``1``, ``0``, ``t``, ``f``, ...):
  connect to the tenant once it is created, as ``allot tenant connect NAME`` does. vcluster
  connects unless ``--connect=false``; allot connects only when asked, so a script's
  ``allot tenant create`` never changes the user's kubeconfig (docs/conformance.md).

Used by :mod:`allot.cli.tenant`.
"""

from __future__ import annotations

import argparse
from typing import Any

from allot.tenancy import names

DRIVERS = ("helm", "platform", "docker")
PLATFORM_FLAGS = ("project", "cluster")
GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def add_host_namespace(parser: Any) -> None:
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="the host namespace of the tenant, as vcluster's -n (allot keeps tenant T in "
        "tenant-T: any other is refused)",
    )


def add_create_flags(parser: Any) -> None:
    vcluster = parser.add_argument_group("vCluster flags (accepted as vcluster create has them)")
    vcluster.add_argument(
        "--driver", choices=DRIVERS, help="accepted and ignored: allot is the one driver"
    )
    vcluster.add_argument("--project", help="accepted and ignored (vCluster Platform project)")
    vcluster.add_argument("--cluster", help="accepted and ignored (vCluster Platform cluster)")
    vcluster.add_argument(
        "--connect",
        nargs="?",
        const="true",
        default="false",
        type=go_bool,
        metavar="BOOL",
        help="switch kubectl to the tenant once it is created, as allot tenant connect "
        "(default false, unlike vcluster)",
    )


def go_bool(text: str) -> bool:
    """A bool flag's value as Go's ``strconv.ParseBool`` (pflag) reads it."""
    if text in GO_TRUE:
        return True
    if text in GO_FALSE:
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def namespace_problem(tenant: str, namespace: str | None, creating: bool = False) -> str:
    """Why ``-n namespace`` does not name where ``tenant`` lives ("" when it does)."""
    home = names.host_namespace(tenant)
    if namespace is None or namespace == home:
        return ""
    if creating:
        return (
            f"allot keeps tenant {tenant} in host namespace {home}, not {namespace}: -n is "
            f"the host namespace, as for vcluster create (use -n {home} or leave -n out)"
        )
    return (
        f"couldn't find vcluster {tenant} in namespace {namespace}: -n is the host namespace "
        f"the tenant lives in, as for vcluster connect, and tenant {tenant} lives in {home} "
        f"(use -n {home} or leave -n out; --context-namespace NS sets the context's namespace)"
    )


def platform_flag_problem(args: argparse.Namespace) -> str:
    """vcluster's refusal of platform flags without ``--driver platform`` ("" if none)."""
    given = [f"--{flag}" for flag in PLATFORM_FLAGS if getattr(args, flag) is not None]
    if not given or args.driver == "platform":
        return ""
    driver = args.driver or "helm"
    return (
        "Following platform flags have been set, which won't have any effect when using "
        f"driver type {driver}: {', '.join(given)}"
    )


def ignored_note(args: argparse.Namespace) -> str:
    """The one line naming the vCluster flags ignored ("" when none was given)."""
    given = [
        f"--{flag} {getattr(args, flag)}"
        for flag in ("driver", *PLATFORM_FLAGS)
        if getattr(args, flag) is not None
    ]
    if not given:
        return ""
    return (
        f"note: ignored {' '.join(given)}: allot serves every tenant itself (it is the one "
        "driver), on one host cluster without vCluster Platform projects"
    )
