"""What each candidate engine of bench_engines.py keeps per log line, on disk, and the column queries it
answers from there (level count, count by address). Imported as `_engine_stores` (bench/ is not a package).

Invariants: a store holds no line text, only per-line numbers (line start, ts, level, derived) and int32
codes of the words and templates with their distinct values, plus the overlay (the masked text of each line
masking changed); `column("starts")` gives the line starts back, the file's size last; stores are written
once and only read after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import _engines as eng
import numpy as np


def _word_lists(found: eng.Columns) -> dict[str, list[str]]:
    return {name: distinct for name, (_, distinct) in found.words.items()}


def _codes(found: eng.Columns, name: str) -> np.ndarray:
    return found.words.get(name, (np.full(len(found.ts), -1), []))[0].astype(np.int32)


class NumpyStore:
    """One .npy file per column (read back memory-mapped) and the distinct words as JSON."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def write(self, found: eng.Columns, starts: np.ndarray, overlay: dict[int, str]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        arrays = {"starts": starts, "ts": found.ts, "level": found.level, "derived": found.derived}
        arrays |= {name: _codes(found, name) for name in found.words}
        for name, array in arrays.items():
            np.save(self.directory / f"{name}.npy", array)
        (self.directory / "words.json").write_text(json.dumps(_word_lists(found)))
        self._sidecars(starts, overlay)

    def _sidecars(self, starts: np.ndarray, overlay: dict[int, str]) -> None:
        """The overlay (row -> masked text) and the file's size (the end of its last line)."""
        (self.directory / "overlay.json").write_text(json.dumps(overlay))
        (self.directory / "meta.json").write_text(json.dumps({"size": int(starts[-1])}))

    def _size(self) -> int:
        return int(json.loads((self.directory / "meta.json").read_text())["size"])

    def column(self, name: str) -> np.ndarray:
        return np.load(self.directory / f"{name}.npy", mmap_mode="r")

    def overlay(self) -> dict[int, str]:
        return {int(row): text for row, text in json.loads((self.directory / "overlay.json").read_text()).items()}

    def level_count(self, level: int) -> int:
        return int(np.count_nonzero(self.column("level") == level))

    def address_counts(self) -> dict[str, int]:
        codes = self.column("addr")
        counts = np.bincount(codes[codes >= 0])
        distinct = json.loads((self.directory / "words.json").read_text())["addr"]
        return {distinct[code]: int(n) for code, n in enumerate(counts) if n}


class ArrowStore(NumpyStore):
    """One Feather (Arrow IPC) file, zstd-compressed, the words as dictionary columns."""

    def write(self, found: eng.Columns, starts: np.ndarray, overlay: dict[int, str]) -> None:
        import pyarrow as pa
        import pyarrow.feather as feather

        self.directory.mkdir(parents=True, exist_ok=True)
        columns = {"start": starts[:-1], "ts": found.ts, "level": found.level, "derived": found.derived}
        columns |= {
            name: pa.DictionaryArray.from_arrays(pa.array(_codes(found, name), mask=_codes(found, name) < 0), distinct)
            for name, distinct in _word_lists(found).items()
        }
        feather.write_feather(pa.table(columns), self.directory / "lines.feather", compression="zstd")
        self._sidecars(starts, overlay)

    def _read(self, name: str) -> Any:
        import pyarrow.feather as feather

        return feather.read_table(self.directory / "lines.feather", columns=[name])[name]

    def column(self, name: str) -> np.ndarray:
        if name == "starts":
            return np.append(self._read("start").to_numpy(), self._size())
        return self._read(name).to_numpy()

    def level_count(self, level: int) -> int:
        import pyarrow.compute as pc

        return int(pc.sum(pc.equal(self._read("level"), level)).as_py() or 0)

    def address_counts(self) -> dict[str, int]:
        import pyarrow.compute as pc

        counted = pc.value_counts(self._read("addr").combine_chunks())
        return {row["values"]: row["counts"] for row in counted.to_pylist() if row["values"] is not None}


class PolarsStore(NumpyStore):
    """One Parquet file (zstd) written and read by polars; the distinct words as JSON."""

    def write(self, found: eng.Columns, starts: np.ndarray, overlay: dict[int, str]) -> None:
        import polars as pl

        self.directory.mkdir(parents=True, exist_ok=True)
        frame = {"start": starts[:-1], "ts": found.ts, "level": found.level, "derived": found.derived}
        frame |= {name: _codes(found, name) for name in found.words}
        pl.DataFrame(frame).write_parquet(self.directory / "lines.parquet", compression="zstd")
        (self.directory / "words.json").write_text(json.dumps(_word_lists(found)))
        self._sidecars(starts, overlay)

    def column(self, name: str) -> np.ndarray:
        import polars as pl

        if name == "starts":
            return np.append(self.column("start"), self._size())
        return pl.read_parquet(self.directory / "lines.parquet", columns=[name])[name].to_numpy()

    def level_count(self, level: int) -> int:
        import polars as pl

        lazy = pl.scan_parquet(self.directory / "lines.parquet").filter(pl.col("level") == level)
        return int(lazy.select(pl.len()).collect().item())

    def address_counts(self) -> dict[str, int]:
        import polars as pl

        lazy = pl.scan_parquet(self.directory / "lines.parquet").filter(pl.col("addr") >= 0)
        counted = lazy.group_by("addr").len().collect()
        distinct = json.loads((self.directory / "words.json").read_text())["addr"]
        return {distinct[code]: n for code, n in counted.iter_rows()}


class DuckStore(NumpyStore):
    """One DuckDB database file: a `lines` table of codes and a `words` table of their text."""

    def write(self, found: eng.Columns, starts: np.ndarray, overlay: dict[int, str]) -> None:
        import duckdb
        import pyarrow as pa

        self.directory.mkdir(parents=True, exist_ok=True)
        columns = {"start": starts[:-1], "ts": found.ts, "level": found.level, "derived": found.derived}
        columns |= {name: _codes(found, name) for name in found.words}
        words = [
            (name, code, word) for name, distinct in _word_lists(found).items() for code, word in enumerate(distinct)
        ]
        with duckdb.connect(str(self.directory / "index.duckdb")) as connection:
            connection.register("frame", pa.table(columns))
            connection.execute("CREATE TABLE lines AS SELECT * FROM frame")
            connection.execute("CREATE TABLE words (kind VARCHAR, code INTEGER, word VARCHAR)")
            if words:
                connection.register(
                    "word_rows", pa.table(dict(zip(("kind", "code", "word"), zip(*words, strict=True), strict=True)))
                )
                connection.execute("INSERT INTO words SELECT * FROM word_rows")
        self._sidecars(starts, overlay)

    def _query(self, sql: str, *args: Any) -> Any:
        import duckdb

        with duckdb.connect(str(self.directory / "index.duckdb"), read_only=True) as connection:
            return connection.execute(sql, list(args)).fetchall()

    def column(self, name: str) -> np.ndarray:
        import duckdb

        if name == "starts":
            return np.append(self.column("start"), self._size())
        with duckdb.connect(str(self.directory / "index.duckdb"), read_only=True) as connection:
            return connection.sql(f"SELECT {name} FROM lines").fetchnumpy()[name]

    def level_count(self, level: int) -> int:
        return int(self._query("SELECT count(*) FROM lines WHERE level = ?", level)[0][0])

    def address_counts(self) -> dict[str, int]:
        rows = self._query(
            "SELECT w.word, count(*) FROM lines AS l JOIN words AS w ON w.kind = 'addr' AND w.code = l.addr GROUP BY 1"
        )
        return dict(rows)


STORES = {"numpy_re": NumpyStore, "pyarrow": ArrowStore, "polars": PolarsStore, "duckdb": DuckStore}
