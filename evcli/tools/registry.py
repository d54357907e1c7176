"""The evidence tools evcli knows, one `ToolSpec` each.

A tool is one module (`evcli/tools/query_metrics.py`, …) that builds its spec and
calls `register`. Everything that lists tools — the tool schemas offered to
models, the guards, the `evcli tool NAME` commands, the Gatekeeper's raw_path
check, the fault-injection suite — reads this registry, so adding a tool is one
module plus its name in `BUILTINS`.

Reading a spec is cheap: a tool module imports at its top only what defining its spec needs (pydantic,
evcli.tools.params, .refs, .fetch and this registry); what its functions call from the backends and the
time parser is imported where they run. `evcli gate` reads the evidence arrays of the tools its session
cited and, without --against, runs none of them (tests/cli/test_startup.py holds it to that).

Invariants: names are unique; a name that is not registered is an error
(`UnknownTool`, exit code 2) wherever it is used; a spec's evidence arrays are
the only parts of its output that become refs: one `$.<array>[<i>]` per item of
a list array, one `$.<name>` for a single item (query_logs' `$.stats`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.tools.fetch import Outcome
    from evcli.tools.params import ToolParams

# The shipped tools, in the order they are offered and listed; each module registers its spec on import.
BUILTINS = ("query_metrics", "query_logs", "lookup_knowledge", "find_changes", "query_kubernetes", "query_traces")

# (params, environment, session) -> outcome; each tool types the first argument as its own params model.
Fetch = Callable[..., "Outcome"]


class UnknownTool(BadInput):
    """A tool name that no registered spec has."""


@dataclass(frozen=True)
class EvidenceArray:
    """One array of a tool's output whose items are evidence, and how an item reads as a ref.

    `single`: the output holds one item (a dict) under `name`, cited as `$.<name>`; it is a ref
    only beside at least one list item (a summary of what was found, never evidence on its own)."""

    name: str
    render: Callable[[dict[str, Any]], str]
    single: bool = False

    @property
    def raw_path_form(self) -> str:
        """How a ref of this array is written in prompts: `$.logs[i]` or `$.stats`."""
        return f"$.{self.name}" if self.single else f"$.{self.name}[i]"


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one spec per registered tool
class ToolSpec:
    """Everything evcli needs to offer, run, record, gate and show one evidence tool."""

    name: str
    description: str  # shown to models in the tool schema
    summary: str  # the `evcli tool NAME` help line
    params: type[ToolParams]
    arrays: tuple[EvidenceArray, ...]
    fetch: Fetch
    # Scope fields recorded in retrieval_details (service, window, keywords, ...).
    scope: Callable[[Any], dict[str, Any]]
    # Narrow tasks: whether recorded params were a precise query, and why new params are wider (None: not wider).
    precise: Callable[[dict[str, Any]], bool] = field(default=lambda params: False)
    wider: Callable[[dict[str, Any], dict[str, Any]], str | None] = field(default=lambda old, new: None)
    # The best relevance level among the output's items, recorded on the invocation.
    relevance: Callable[[dict[str, Any]], str | None] = field(default=lambda output: None)
    # Where its evidence comes from: the environment's backend (snapshot or live) or the runbooks (knowledge).
    # AIOps self-evaluation and `gate --against` (which cannot re-run a live backend) read it.
    source: Literal["backend", "runbooks"] = "backend"
    # The backend capabilities (evcli.backends.registry.Capability values) whose data it reads: `gate --against`
    # asks whether a live backend named by a session can have served a call; () means any backend may have.
    reads: tuple[str, ...] = ()
    # Help per parameter field, shown as `evcli tool NAME --<field>` help and in the model's tool schema
    # (fields every tool explains the same way: FIELD_HELP).
    option_help: dict[str, str] = field(default_factory=dict)
    # Work done once per environment that a call needs but is not timed as the call (building an index, reading
    # the snapshot's clock): run with the environment's backend and the call's validated params before the
    # call's deadline starts; a BackendError fails the call.
    prepare: Callable[[Any, Any], None] | None = None

    def parameter_help(self, name: str) -> str | None:
        """What parameter `name` takes, with an example: this tool's own text, else the shared one."""
        return self.option_help.get(name) or FIELD_HELP.get(name)

    @property
    def array_names(self) -> tuple[str, ...]:
        """The list arrays of the output (`$.<name>[i]` refs)."""
        return tuple(array.name for array in self.arrays if not array.single)

    @property
    def single_names(self) -> tuple[str, ...]:
        """The single items of the output (`$.<name>` refs)."""
        return tuple(array.name for array in self.arrays if array.single)


# Help for a parameter field every tool explains the same way (a tool's `option_help` comes first).
FIELD_HELP = {
    "service": "A service of the environment, or one of its aliases (default: every service).",
    "alertname": "Only alerts of this name, e.g. HighCPUUsage.",
    "window": "Relative window ending at the environment's clock: 30m, 2h, 1d (not with since/until).",
    "since": (
        "Start of the range: ISO 8601 (2023-01-29T10:03:00+08:00), a date and time (2023-01-29 10:03), a time of "
        "day (10:03) or a relative time (-2h); without a zone in the environment's timezone. Default: the whole "
        "snapshot (live: the last hour)."
    ),
    "until": "End of the range, in the same forms as since (default: the end of the snapshot, or now).",
}

_SPECS: dict[str, ToolSpec] = {}
_loaded: list[bool] = []


def _load_builtins() -> None:
    if not _loaded:
        _loaded.append(True)
        for name in BUILTINS:
            importlib.import_module(f"evcli.tools.{name}")


def register(spec: ToolSpec) -> ToolSpec:
    if spec.name in _SPECS and _SPECS[spec.name] is not spec:
        raise ValueError(f"tool {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _SPECS.pop(name, None)


def specs() -> tuple[ToolSpec, ...]:
    """Every registered tool: the built-ins in `BUILTINS` order, then the others in registration order."""
    _load_builtins()
    rank = {name: position for position, name in enumerate(BUILTINS)}
    return tuple(sorted(_SPECS.values(), key=lambda spec: rank.get(spec.name, len(rank))))


def names(source: str | None = None) -> tuple[str, ...]:
    """The registered tool names, or those whose evidence comes from `source`."""
    return tuple(spec.name for spec in specs() if source in (None, spec.source))


def find(name: str | None) -> ToolSpec | None:
    """The spec of `name`, or None; a built-in is imported alone when it is the one asked (`gate` reads the
    specs of the tools its session cited, not all six)."""
    if name in BUILTINS and name not in _SPECS:
        importlib.import_module(f"evcli.tools.{name}")
    if name not in _SPECS:
        _load_builtins()
    return _SPECS.get(name or "")


def get(name: str | None) -> ToolSpec:
    """The spec of `name`; UnknownTool (one line listing the tools) otherwise."""
    spec = find(name)
    if spec is None:
        raise UnknownTool(f"unknown tool {name!r}; tools: {', '.join(names())}")
    return spec


def validate_params(tool_name: str, raw: dict[str, Any]) -> ToolParams:
    """`raw` as the parameters of tool `tool_name`; an unknown tool or a bad value is one BadInput line."""
    model = get(tool_name).params
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "parameters"
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{tool_name}: {where}: {message}") from exc
