"""env.toml of an environment snapshot: name, timezone, now, [services.NAME] aliases and [topology].

`[topology]` says who calls whom: `caller = ["callee", ...]` (names or aliases of services); the
change finder (evcli.diagnosis) ranks a service whose callees look normal above callers that only
show its effect."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from evcli.backends.snapshot_time import Timebase, parse_timestamp
from evcli.core.errors import BackendError
from evcli.core.files import read_text

ENV_FILE = "env.toml"
ENV_KEYS = frozenset({"name", "timezone", "now", "services", "topology"})
SERVICE_KEYS = frozenset({"aliases"})


@dataclass(frozen=True)
class EnvConfig:
    name: str | None = None
    timezone_name: str = "UTC"
    timezone: tzinfo = UTC
    now: datetime | None = None
    services: dict[str, tuple[str, ...]] = field(default_factory=dict)  # service -> aliases
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)  # caller -> callees, as written
    warnings: tuple[str, ...] = ()  # unknown keys: readable, but probably a typo


def load_env_config(path: Path) -> EnvConfig:
    """env.toml as a config; a missing file is the default. Raises BackendError when unusable."""
    if not path.exists():
        return EnvConfig()
    try:
        data = tomllib.loads(read_text(path, path.parent))
    except (OSError, UnicodeDecodeError) as error:
        raise BackendError(f"{ENV_FILE}: cannot read: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise BackendError(f"{ENV_FILE}: invalid TOML: {error}") from error

    warnings = [f"unknown key {key!r} (expected {', '.join(sorted(ENV_KEYS))})" for key in data if key not in ENV_KEYS]
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise BackendError(f"{ENV_FILE}: name must be a string")
    zone_name = data.get("timezone", "UTC")
    try:
        zone: tzinfo = UTC if zone_name == "UTC" else ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as error:
        raise BackendError(f"{ENV_FILE}: unknown timezone {zone_name!r} (use an IANA name)") from error
    now = _config_now(data.get("now"), zone)
    services = _config_services(data.get("services", {}), warnings)
    topology = _config_topology(data.get("topology", {}))
    return EnvConfig(name, zone_name, zone, now, services, topology, tuple(warnings))


def _config_topology(raw: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise BackendError(f"{ENV_FILE}: topology must be a table of caller = [callees]")
    topology: dict[str, tuple[str, ...]] = {}
    for caller, callees in raw.items():
        if not isinstance(callees, list) or not all(isinstance(name, str) and name.strip() for name in callees):
            raise BackendError(f"{ENV_FILE}: topology.{caller} must be a list of service names")
        topology[caller] = tuple(name.strip() for name in callees)
    return topology


def _config_now(raw: Any, zone: tzinfo) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return (raw if raw.tzinfo else raw.replace(tzinfo=zone)).astimezone(UTC)
    moment = parse_timestamp(raw, Timebase.of(zone)) if isinstance(raw, str) else None
    if moment is None:
        raise BackendError(f"{ENV_FILE}: now must be an ISO-8601 date and time, got {raw!r}")
    return moment


def _config_services(raw: Any, warnings: list[str]) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise BackendError(f"{ENV_FILE}: services must be a table of [services.NAME] tables")
    services: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {name.lower(): name for name in raw}
    for service, table in raw.items():
        if not isinstance(table, dict):
            raise BackendError(f"{ENV_FILE}: services.{service} must be a table")
        warnings.extend(
            f"unknown key {key!r} in services.{service} (expected aliases)" for key in table if key not in SERVICE_KEYS
        )
        aliases = table.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(alias, str) and alias.strip() for alias in aliases):
            raise BackendError(f"{ENV_FILE}: services.{service}.aliases must be a list of names")
        for alias in aliases:
            claimed = owner.setdefault(alias.lower(), service)
            if claimed != service:
                raise BackendError(
                    f"{ENV_FILE}: alias {alias!r} of {service} is already the name or an alias of {claimed}"
                )
        services[service] = tuple(aliases)
    return services
