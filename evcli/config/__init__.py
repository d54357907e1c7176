"""evcli's configuration: one TOML file, its named profiles, environment variables and flags, layered.

`load()` gives the effective `Settings` with the source of every value (evcli/config/sources.py);
`Settings.environment_spec()` is the environment the shared command options describe, and
`ModelsSettings.for_role(role)` each role's `ModelSettings` (model, api_base, timeout, max_tokens,
retries). The command line imports this package only inside commands, so `evcli --help`, `gate`
and `trace` never load it.
"""

from __future__ import annotations

from evcli.config.model import BackendSettings, ModelSettings, ModelsSettings, Settings
from evcli.config.sources import CONFIG_FILENAME, Loaded, default_config_path, load

__all__ = [
    "CONFIG_FILENAME",
    "BackendSettings",
    "Loaded",
    "ModelSettings",
    "ModelsSettings",
    "Settings",
    "default_config_path",
    "load",
]
