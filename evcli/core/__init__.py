"""What every layer uses: errors, time, text, canonical JSON, redaction, paths and safe file reading.

Invariant: a module here imports no evcli module outside `evcli.core`, so any layer may import it.
"""
