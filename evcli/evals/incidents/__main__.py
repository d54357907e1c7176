"""python -m evcli.evals.incidents --count N --first-seed S --out DIR [--split tune|holdout]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evcli.evals.incidents import suite, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evcli.evals.incidents", description="Write seeded incident snapshots and their truth.json."
    )
    parser.add_argument("--count", type=int, required=True, help="how many consecutive seeds to consider")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="directory for inc-XXXX/ and truth.json")
    parser.add_argument("--split", choices=("tune", "holdout"), help="only the seeds of this split")
    options = parser.parse_args(argv)
    if options.count < 0:
        parser.error("--count must not be negative")
    seeds = suite(options.count, options.first_seed, options.split)
    try:
        incidents = write(options.out, seeds)
    except FileExistsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {len(incidents)} incidents and truth.json to {options.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
