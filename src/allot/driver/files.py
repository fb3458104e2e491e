"""Where a data directory keeps its fleet, and reading fleet files with clear errors.

``allot up --fleet FILE`` copies the fleet into ``<data-dir>/fleet.yaml`` so that restarts
and ``allot fleet scale`` work on the same description; without ``--fleet`` the seed 000
fleet is used. The driver's feature gates the platform runs with go to
``<data-dir>/driver-gates.json``, so that ``allot fleet`` commands publish as that driver
does. Called by the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import yaml

from allot.api.errors import yaml_error_text
from allot.driver.fleet import SEED_000_FLEET, Fleet, FleetError, parse_fleet

FLEET_FILE = "fleet.yaml"
GATES_FILE = "driver-gates.json"


def read_fleet(path: Path) -> Fleet:
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise FleetError(f'the path "{path}" does not exist') from None
    except yaml.YAMLError as err:
        raise FleetError(f'error parsing "{path}": {yaml_error_text(err)}') from None
    return parse_fleet(document)


def data_dir_fleet(data_dir: Path, override: Path | None) -> Fleet:
    """The fleet for a data directory: the override, the saved one, or seed 000's
    (read only: ``allot up`` saves it once it holds the data directory)."""
    saved = data_dir / FLEET_FILE
    if override is not None:
        fleet = read_fleet(override)
    elif saved.exists():
        fleet = read_fleet(saved)
    else:
        fleet = parse_fleet(SEED_000_FLEET)
    return fleet


def save_fleet(data_dir: Path, fleet: Fleet) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / FLEET_FILE).write_text(yaml.safe_dump(fleet.raw, sort_keys=False))


def save_driver_gates(data_dir: Path, gates: Mapping[str, bool]) -> None:
    """Record the driver gates of this run (each ``allot up`` writes its own)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / GATES_FILE).write_text(json.dumps(dict(sorted(gates.items())), indent=2) + "\n")


def data_dir_driver_gates(data_dir: Path) -> dict[str, bool]:
    """The driver gates the platform on ``data_dir`` runs with (none set: all defaults)."""
    try:
        recorded = json.loads((data_dir / GATES_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): bool(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
