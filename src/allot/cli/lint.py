"""``allot lint MANIFESTS...``: check DeviceClasses against the ResourceSlices given.

Reads every DeviceClass and ResourceSlice from the files (other kinds are ignored), prints
one block per finding with details and a corrected selector where one can be derived, and
exits 1 when there are findings, 0 otherwise, 2 when the input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from allot.api import resource_v1 as resourceapi
from allot.cli.output import add_report_output
from allot.lint.catalogue import TENANT_LABEL, CatalogueLinter, Finding
from allot.manifests.documents import ManifestError, read_sources
from allot.manifests.verdicts import Outcome, judge


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check DeviceClasses against the devices ResourceSlices publish",
        description="Find classes that match nothing, selectors that fail on some devices, "
        "classes of different tenants sharing devices and whole-GPU classes that "
        "also take GPU partitions.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="DeviceClass and ResourceSlice manifests (YAML or JSON; - for standard input)",
    )
    add_report_output(parser)
    parser.add_argument(
        "--tenant-label",
        default=TENANT_LABEL,
        help=f"label naming a class's tenant (default {TENANT_LABEL})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        documents = read_sources(args.files)
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    classes: list[resourceapi.DeviceClass] = []
    slices: list[resourceapi.ResourceSlice] = []
    for verdict in judge(documents):
        if verdict.outcome is Outcome.INVALID:
            print(verdict.render(), file=sys.stderr)
            continue
        if isinstance(verdict.obj, resourceapi.DeviceClass):
            classes.append(verdict.obj)
        elif isinstance(verdict.obj, resourceapi.ResourceSlice):
            slices.append(verdict.obj)
    if not classes:
        print("error: no DeviceClass found in the input", file=sys.stderr)
        return 2
    if not slices:
        print(
            "error: no ResourceSlice found in the input: lint judges classes against the "
            "devices the slices publish (add them: kubectl get resourceslices -o yaml > "
            "slices.yaml; `allot validate` checks classes alone)",
            file=sys.stderr,
        )
        return 2
    findings = CatalogueLinter(classes, slices, tenant_label=args.tenant_label).lint()
    if args.output == "json":
        print(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        devices = sum(len(s.spec.devices or []) for s in slices)
        print(
            f"{len(classes)} class(es) checked against {devices} device(s) in "
            f"{len(slices)} slice(s): {len(findings)} finding(s)"
        )
        for finding in findings:
            print(render(finding))
    return 1 if findings else 0


def render(finding: Finding) -> str:
    lines = [f"\n{finding.device_class}: [{finding.code}] {finding.message}"]
    lines += [f"    - {detail}" for detail in finding.details]
    if finding.suggestion:
        lines.append(f"    suggested selector: {finding.suggestion}")
    return "\n".join(lines)
