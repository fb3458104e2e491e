"""The tenants the platform serves right now, shared by the guard, the sync and the
controller: which clusters are tenants, their specs and their entitled classes. Filled by
the tenant controller from the host's Tenant objects; read everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allot.api.tenancy import Tenant


@dataclass
class TenantEntry:
    tenant: Tenant
    entitled: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.tenant.metadata.name or ""


@dataclass
class TenantDirectory:
    entries: dict[str, TenantEntry] = field(default_factory=dict)

    def get(self, name: str) -> TenantEntry | None:
        return self.entries.get(name)

    def is_tenant(self, cluster: str) -> bool:
        return cluster in self.entries

    def names(self) -> list[str]:
        return sorted(self.entries)

    def put(self, entry: TenantEntry) -> None:
        self.entries[entry.name] = entry

    def drop(self, name: str) -> None:
        self.entries.pop(name, None)
