"""evcli: incident diagnosis whose every fact cites a recorded tool output."""

from evcli import native

__version__ = "0.1.0"

native.install()  # the Gatekeeper's compiled modules, when built from these sources (see evcli.native)
