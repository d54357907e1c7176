"""The knowledge index: runbooks chunked by heading, searched with FTS5 BM25.

The index is its own SQLite file and only a cache of the markdown files, so a
schema change drops and rebuilds it instead of migrating. Chunk text goes into
an FTS5 table with the trigram tokenizer, which finds English and Chinese
substrings alike; query terms shorter than a trigram (Chinese two-character
words such as 内存) are looked up with LIKE and scored with the same BM25
formula, so both kinds of hit add up on one scale. Chinese queries come without
spaces, so a long CJK run is matched by its trigrams, and a run none of whose
trigrams is indexed falls back to its two-character pieces.

Two layers, as the design names them: L1 is the ranked chunk retrieval and the
only source of blocks; L0 is an exact hint (the alert, title or service named in
a document's front matter) that labels and lifts that document's L1 blocks.

Every write runs in one `BEGIN IMMEDIATE` transaction (see evcli.store.db).
Runbook text is masked (evcli.core.redaction) before it is parsed, so no
secret reaches the index, its search results or a model.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import math
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from evcli.core.canonical import canonical_json
from evcli.core.errors import BadInput, StoreError
from evcli.core.files import LIMITS, ReadLimits, Walk, read_bytes, walk
from evcli.core.paths import data_dir
from evcli.core.redaction import Redactor
from evcli.core.time import now_iso
from evcli.kb.frontmatter import as_list, split_front_matter
from evcli.kb.scoped import SCOPED_TABLE, Scoped, scoped_table
from evcli.store.sqlite import connect_wal

if TYPE_CHECKING:
    from sqlite_utils import Database

SCHEMA_VERSION = (
    "3"  # 2: chunk text masked (an index of version 1 may hold raw secrets: rebuilt); 3: more secret shapes
)
INDEX_FILENAME = "kb.db"
RUNBOOKS_DIR = "runbooks"

# A section longer than this is split on paragraph boundaries.
MAX_CHUNK_CHARS = 1500
# bm25() weights of the FTS columns (title, heading, text): a term in the
# document title or the section heading says more about the block than one in passing.
FTS_COLUMN_WEIGHTS = (3.0, 2.0, 1.0)
# FTS5's BM25 parameters and idf floor, reused to score the LIKE fallback terms.
BM25_K1 = 1.2
BM25_B = 0.75
BM25_MIN_IDF = 1e-6
# HIGHLY_RELEVANT: score at least this fraction of the best score of the query...
HIGHLY_RELEVANT_MIN_SCORE_RATIO = 0.6
# ...and at least this many distinct query terms in the block (all of them, if the query has fewer).
HIGHLY_RELEVANT_MIN_TERMS = 2
# The FTS5 trigram tokenizer cannot match a phrase shorter than this.
TRIGRAM = 3
DEFAULT_DIRECTORY_KEY = "default_directory"  # kb_meta: what `evcli kb search` searches when it names none
_POINT_AT_RUNBOOKS = "point --runbooks or `evcli kb index` at a runbook directory"

STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it my of on or "
    "should the this to was what when where which why with".split()
)
CJK_STOPWORDS = ("为什么", "怎么办", "怎么", "如何", "怎样", "什么", "请问", "一下", "的", "了", "吗", "呢", "吧")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_PUNCT = "\u3000-\u303f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
_TERM_RUN = re.compile(rf"[{_CJK}]+|[^\s{_CJK}{_CJK_PUNCT}]+")
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")
_CJK_STOP_SPLIT = re.compile("|".join(map(re.escape, sorted(CJK_STOPWORDS, key=len, reverse=True))))
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>*+-=/\\|&^%$#@~"
_HEADING = re.compile(r"^ {0,3}(#{1,3})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")

SCHEMA = (
    "CREATE TABLE kb_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE kb_doc (
        id INTEGER PRIMARY KEY,
        directory TEXT NOT NULL,      -- absolute path of the indexed directory
        path TEXT NOT NULL,           -- relative to directory, e.g. runbooks/high-memory.md
        sha256 TEXT NOT NULL,
        mtime REAL NOT NULL,          -- of the file when this content was indexed
        title TEXT NOT NULL,
        front_matter TEXT NOT NULL,   -- canonical JSON
        indexed_at TEXT NOT NULL,
        UNIQUE (directory, path)
    )""",
    # Lower-cased exact-match keys of the L0 layer: kind is alert, service or title.
    """CREATE TABLE kb_hint (
        doc_id INTEGER NOT NULL REFERENCES kb_doc(id),
        kind TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (doc_id, kind, value)
    ) WITHOUT ROWID""",
    "CREATE INDEX kb_hint_lookup ON kb_hint (kind, value)",
    """CREATE TABLE kb_skill (
        doc_id INTEGER NOT NULL REFERENCES kb_doc(id),
        name TEXT NOT NULL,
        PRIMARY KEY (doc_id, name)
    ) WITHOUT ROWID""",
    """CREATE TABLE kb_chunk (
        id INTEGER PRIMARY KEY,
        doc_id INTEGER NOT NULL REFERENCES kb_doc(id),
        seq INTEGER NOT NULL,
        title TEXT NOT NULL,          -- the document title, repeated so FTS can rank on it
        heading TEXT NOT NULL,
        text TEXT NOT NULL,
        length INTEGER NOT NULL       -- characters of text, for BM25 of the LIKE fallback
    )""",
    "CREATE INDEX kb_chunk_doc ON kb_chunk (doc_id)",
    """CREATE VIRTUAL TABLE kb_chunk_fts USING fts5(
        title, heading, text, content='kb_chunk', content_rowid='id', tokenize='trigram'
    )""",
    """CREATE TRIGGER kb_chunk_ai AFTER INSERT ON kb_chunk BEGIN
        INSERT INTO kb_chunk_fts (rowid, title, heading, text) VALUES (new.id, new.title, new.heading, new.text);
    END""",
    """CREATE TRIGGER kb_chunk_ad AFTER DELETE ON kb_chunk BEGIN
        INSERT INTO kb_chunk_fts (kb_chunk_fts, rowid, title, heading, text)
        VALUES ('delete', old.id, old.title, old.heading, old.text);
    END""",
)

Layer = Literal["L0", "L1"]
RelevanceLevel = Literal["PRECISE", "HIGHLY_RELEVANT", "REFERENCE"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class EvidenceBlock(_Record):
    doc: str
    title: str
    heading: str
    text: str
    relevance_level: RelevanceLevel
    score: float
    layer: Layer
    directory: str


class Skill(_Record):
    name: str
    doc: str
    title: str
    alerts: list[str]
    services: list[str]


class IndexReport(_Record):
    directory: str
    added: int
    updated: int
    removed: int
    unchanged: int
    chunks: int  # chunks of the directory's documents in the index after this run
    seconds: float
    refused: list[str] = []  # "path: why" of each file not read (a symlink leading out, a FIFO, too large)


def default_index_path() -> Path:
    """`kb.db` in the data directory, next to the trace store."""
    return data_dir() / INDEX_FILENAME


# --- documents ---------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    heading: str
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    front_matter: dict[str, Any]
    chunks: list[Chunk]


def parse_document(text: str, *, stem: str) -> ParsedDocument:
    """Front matter, title and heading chunks of one markdown document."""
    front_matter, body = split_front_matter(text.replace("\r\n", "\n"))
    sections = _sections(body)
    first_h1 = next((heading for level, heading, _ in sections if level == 1), None)
    title = _collapse(str(front_matter.get("title") or "")) or first_h1 or stem
    chunks = [
        Chunk(heading=heading or title, text=piece)
        for _, heading, section_body in sections
        for piece in _split_section(section_body)
    ]
    return ParsedDocument(title=title, front_matter=front_matter, chunks=chunks)


def _sections(body: str) -> list[tuple[int, str | None, str]]:
    """(heading level, heading, raw body) per `#`..`###` section; the text before any heading has level 0."""
    sections: list[tuple[int, str | None, list[str]]] = [(0, None, [])]
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            sections.append((len(heading.group(1)), _collapse(heading.group(2)), []))
        else:
            sections[-1][2].append(line)
    return [(level, heading, "\n".join(lines)) for level, heading, lines in sections]


def _split_section(raw: str) -> list[str]:
    """The section text with whitespace collapsed, in pieces of at most MAX_CHUNK_CHARS at paragraph breaks."""
    paragraphs = [piece for para in _PARAGRAPH_BREAK.split(raw) for piece in _hard_split(_collapse(para))]
    pieces: list[str] = []
    for paragraph in filter(None, paragraphs):
        if pieces and len(pieces[-1]) + 1 + len(paragraph) <= MAX_CHUNK_CHARS:
            pieces[-1] += " " + paragraph
        else:
            pieces.append(paragraph)
    return pieces


def _hard_split(paragraph: str) -> list[str]:
    """A single paragraph over the limit is cut at a space, or anywhere if it has none (CJK)."""
    pieces = []
    while len(paragraph) > MAX_CHUNK_CHARS:
        cut = paragraph.rfind(" ", 0, MAX_CHUNK_CHARS + 1)
        cut = cut if cut > 0 else MAX_CHUNK_CHARS
        pieces.append(paragraph[:cut].strip())
        paragraph = paragraph[cut:].strip()
    return [*pieces, paragraph]


def _collapse(text: str) -> str:
    return " ".join(text.split())


def markdown_files(directory: Path, limits: ReadLimits = LIMITS) -> Walk:
    """`runbooks/**/*.md` under directory, or `**/*.md` if it has no runbooks/; hidden paths skipped,
    symlinks followed only inside directory. BadInput when the tree is larger than `limits` allow."""
    root = directory / RUNBOOKS_DIR if (directory / RUNBOOKS_DIR).is_dir() else directory
    return walk(root, within=directory, suffix=".md", skip_hidden=True, limits=limits)


# --- queries -----------------------------------------------------------------


def query_terms(query: str) -> list[str]:
    """Lower-cased distinct terms: whitespace, CJK/ASCII boundaries and Chinese stopwords split; stopwords dropped."""
    terms: list[str] = []
    for run in _TERM_RUN.findall(query.lower()):
        pieces = _CJK_STOP_SPLIT.split(run) if _CJK_RUN.match(run) else [run.strip(_EDGE_PUNCT)]
        for term in pieces:
            # One character matches almost everything; it would only add noise.
            if len(term) > 1 and term not in STOPWORDS and term not in terms:
                terms.append(term)
    return terms


def match_units(term: str) -> list[str]:
    """What FTS MATCHes for a term: the term itself, or for a long CJK run (Chinese has no
    spaces, so "数据库连接池耗尽" is one run) its trigrams, so a document with part of it
    still matches and more shared trigrams rank higher. Empty for terms below a trigram."""
    if len(term) < TRIGRAM:
        return []
    if _CJK_RUN.match(term) and len(term) > TRIGRAM:
        return [term[i : i + TRIGRAM] for i in range(len(term) - TRIGRAM + 1)]
    return [term]


def fts_expression(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression ORing every unit as a quoted string, so no user text is ever FTS syntax."""
    units = list(dict.fromkeys(unit for term in terms for unit in match_units(term)))
    return " OR ".join('"' + unit.replace('"', '""') + '"' for unit in units) or None


def cjk_pieces(term: str) -> list[str]:
    """A CJK run cut into two-character pieces, the length of most Chinese words ("内存泄漏" -> 内存, 泄漏)."""
    pieces = [term[i : i + 2] for i in range(0, len(term) - 1, 2)]
    return pieces + [term[-2:]] if len(term) % 2 else pieces


def mentions(term: str, haystack: str) -> bool:
    """Does the lower-cased haystack contain the term (a long CJK term: at least half its trigrams)?"""
    if term in haystack:
        return True
    units = match_units(term)
    return len(units) > 1 and 2 * sum(unit in haystack for unit in units) >= len(units)


def _like_pattern(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# --- the index ---------------------------------------------------------------


class KnowledgeIndex:
    """One index file; any number of indexed directories, told apart by their absolute path."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_index_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = connect_wal(self.path)
            self._scoped: Scoped | None = None  # the directory the scoped table holds
            self._db: Database | None = None
            if self._schema_version() != SCHEMA_VERSION:
                # Re-checked under the write lock: another process may have rebuilt it meanwhile.
                with self._write():
                    if self._schema_version() != SCHEMA_VERSION:
                        self._rebuild_schema()
            # Only now: dropping an older schema must not trip over its own references.
            self.conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from exc
        except OSError as exc:
            raise StoreError(f"cannot open knowledge index {self.path}: {exc.strerror or exc}") from exc

    @property
    def db(self) -> Database:
        """The sqlite-utils view of the connection, for writes (reads use the connection directly)."""
        if self._db is None:
            from sqlite_utils import Database  # deferred: ~0.1 s to import, and searching never needs it

            self._db = Database(self.conn)
        return self._db

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> KnowledgeIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- indexing ------------------------------------------------------------

    def index_dir(self, directory: Path, *, as_default: bool = False) -> IndexReport:
        """Bring the index in line with the directory's markdown files, in one transaction; `as_default`
        also makes it the directory searched when none is named (`evcli kb index DIR`, not a lookup)."""
        started = time.perf_counter()
        directory = Path(directory).expanduser().resolve()
        if not directory.is_dir():
            raise BadInput(
                f"knowledge directory {directory} does not exist", hint="pass a directory with runbooks/*.md"
            )
        try:
            found = markdown_files(directory)
        except BadInput as exc:
            raise BadInput(f"{directory} not indexed: {exc.message}", hint=_POINT_AT_RUNBOOKS) from exc
        if not found.files:
            raise BadInput(f"no markdown files under {directory}", hint="put runbooks in DIR/runbooks/*.md")
        contents: dict[str, tuple[Path, bytes]] = {}
        for path in found.files:
            try:
                contents[path.relative_to(directory).as_posix()] = (path, read_bytes(path, directory))
            except OSError as exc:
                raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc
        refused = [f"{path.relative_to(directory).as_posix()}: {reason}" for path, reason in found.refused]
        added = updated = unchanged = 0
        with self._guard(), self._write():
            stored = {
                rel: (doc_id, digest)
                for doc_id, rel, digest in self.conn.execute(
                    "SELECT id, path, sha256 FROM kb_doc WHERE directory = ?", [str(directory)]
                )
            }
            gone = [doc_id for rel, (doc_id, _) in stored.items() if rel not in contents]
            self._delete_docs(gone)
            for rel, (path, raw) in contents.items():
                digest = hashlib.sha256(raw).hexdigest()
                doc_id, old_digest = stored.get(rel, (None, None))
                if digest == old_digest:
                    unchanged += 1
                    continue
                if doc_id is None:
                    added += 1
                else:
                    self._delete_docs([doc_id])
                    updated += 1
                self._insert_doc(directory, rel, path, raw, digest)
            (chunks,) = self.conn.execute(
                "SELECT count(*) FROM kb_chunk c JOIN kb_doc d ON d.id = c.doc_id WHERE d.directory = ?",
                [str(directory)],
            ).fetchone()
            if as_default:
                self.conn.execute(
                    "INSERT OR REPLACE INTO kb_meta (key, value) VALUES (?, ?)", [DEFAULT_DIRECTORY_KEY, str(directory)]
                )
        return IndexReport(
            directory=str(directory),
            added=added,
            updated=updated,
            removed=len(gone),
            unchanged=unchanged,
            chunks=chunks,
            seconds=round(time.perf_counter() - started, 3),
            refused=refused,
        )

    def _insert_doc(self, directory: Path, rel: str, path: Path, raw: bytes, digest: str) -> None:
        parsed = parse_document(Redactor.from_env().mask_text(raw.decode("utf-8", errors="replace")), stem=path.stem)
        fm = parsed.front_matter
        doc_id = (
            self.db.table("kb_doc")
            .insert(
                {
                    "directory": str(directory),
                    "path": rel,
                    "sha256": digest,
                    "mtime": path.stat().st_mtime,
                    "title": parsed.title,
                    "front_matter": canonical_json(fm),
                    "indexed_at": now_iso(),
                }
            )
            .last_pk
        )
        hints = {("title", parsed.title.lower())}
        hints |= {("alert", alert.lower()) for alert in as_list(fm.get("alerts"))}
        hints |= {("service", service.lower()) for service in as_list(fm.get("services"))}
        self.conn.executemany(
            "INSERT INTO kb_hint (doc_id, kind, value) VALUES (?, ?, ?)",
            [(doc_id, kind, value) for kind, value in hints],
        )
        self.conn.executemany(
            "INSERT OR IGNORE INTO kb_skill (doc_id, name) VALUES (?, ?)",
            [(doc_id, name) for name in as_list(fm.get("skill"))],
        )
        self.conn.executemany(
            "INSERT INTO kb_chunk (doc_id, seq, title, heading, text, length) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (doc_id, seq, parsed.title, chunk.heading, chunk.text, len(chunk.text))
                for seq, chunk in enumerate(parsed.chunks)
            ],
        )

    def _delete_docs(self, doc_ids: list[int]) -> None:
        rows = [(doc_id,) for doc_id in doc_ids]
        for table, key in (("kb_chunk", "doc_id"), ("kb_hint", "doc_id"), ("kb_skill", "doc_id"), ("kb_doc", "id")):
            self.conn.executemany(f"DELETE FROM {table} WHERE {key} = ?", rows)

    def default_directory(self) -> Path | None:
        """The directory last indexed `as_default`, None when there is none (or the index was rebuilt since)."""
        with self._guard():
            row = self.conn.execute("SELECT value FROM kb_meta WHERE key = ?", [DEFAULT_DIRECTORY_KEY]).fetchone()
        return Path(row[0]) if row else None

    # --- search --------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        alertname: str | None = None,
        service: str | None = None,
        directory: Path | None = None,
    ) -> list[EvidenceBlock]:
        """The best `limit` blocks for the query: L0-hinted documents' blocks first, then by score."""
        terms = query_terms(query)
        if not terms or limit < 1:
            return []
        scope = str(Path(directory).expanduser().resolve()) if directory is not None else None
        with self._guard():
            terms = self._split_unknown_cjk_terms(terms, scope)
            scores: dict[int, float] = {}
            for chunk_id, score in self._fts_scores(terms, scope) + self._like_scores(terms, scope):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + score
            if not scores:
                return []
            hinted = self._hinted_chunks(query, terms, alertname, service)
            # Ties go to the earlier section by document path and place in the file, never by row id (a
            # re-indexed document gets new ids), and scores are compared rounded (float noise reorders
            # nothing): the same query on the same runbooks returns the same blocks in the same order.
            place = self._chunk_places(list(scores))
            top = heapq.nsmallest(
                limit,
                scores,
                key=lambda chunk_id: (chunk_id not in hinted, -round(scores[chunk_id], 6), place[chunk_id]),
            )
            rows = self._chunk_rows(top)
        best = max(scores.values())
        return [self._block(rows[chunk_id], scores[chunk_id], best, terms, chunk_id in hinted) for chunk_id in top]

    def _split_unknown_cjk_terms(self, terms: list[str], scope: str | None) -> list[str]:
        """A long CJK term none of whose trigrams is in the index becomes its two-character pieces:
        "内存泄漏" still finds a runbook that says 内存 and 泄漏 apart."""
        split: list[str] = []
        for term in terms:
            if len(term) > TRIGRAM and _CJK_RUN.match(term) and not self._any_fts_hit(term, scope):
                split += [piece for piece in cjk_pieces(term) if piece not in split and piece not in terms]
            elif term not in split:
                split.append(term)
        return split

    def _any_fts_hit(self, term: str, scope: str | None) -> bool:
        sql = (
            "SELECT 1 FROM kb_chunk_fts f JOIN kb_chunk c ON c.id = f.rowid JOIN kb_doc d ON d.id = c.doc_id"
            " WHERE kb_chunk_fts MATCH :expression AND (:scope IS NULL OR d.directory = :scope) LIMIT 1"
        )
        return self.conn.execute(sql, {"expression": fts_expression([term]), "scope": scope}).fetchone() is not None

    def _fts_scores(self, terms: list[str], scope: str | None) -> list[tuple[int, float]]:
        expression = fts_expression(terms)
        if expression is None:
            return []
        weights = ", ".join(map(str, FTS_COLUMN_WEIGHTS))
        # BM25 weighs a term by how rare it is in the table searched: a directory is scored in a table of its
        # own chunks, so its order does not change when other directories are indexed into the same file.
        table = "kb_chunk_fts" if scope is None else SCOPED_TABLE
        if scope is not None:
            self._scoped = scoped_table(self.conn, scope, self._scoped)
        sql = f"SELECT rowid, -bm25({table}, {weights}) FROM {table} WHERE {table} MATCH :expression"
        return self.conn.execute(sql, {"expression": expression}).fetchall()

    def _like_scores(self, terms: list[str], scope: str | None) -> list[tuple[int, float]]:
        """BM25 over chunk text for the terms too short for the trigram index."""
        short = [term for term in terms if not match_units(term)]
        if not short:
            return []
        within = " AND doc_id IN (SELECT id FROM kb_doc WHERE directory = :scope)" if scope is not None else ""
        total, avg_length = self.conn.execute(  # the directory's own statistics, as for the FTS scores
            f"SELECT count(*), avg(length) FROM kb_chunk WHERE 1{within}", {"scope": scope}
        ).fetchone()
        sql = "SELECT id, length, text FROM kb_chunk WHERE text LIKE :pattern ESCAPE '\\'" + within
        scored: list[tuple[int, float]] = []
        for term in short:
            hits = self.conn.execute(sql, {"pattern": _like_pattern(term), "scope": scope}).fetchall()
            idf = max(math.log((total - len(hits) + 0.5) / (len(hits) + 0.5)), BM25_MIN_IDF)
            cased = term != term.upper()  # only then can case matter (and lower() is slow on CJK text)
            for chunk_id, length, text in hits:
                frequency = max((text.lower() if cased else text).count(term), 1)  # LIKE matched: at least once
                norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_length)
                scored.append((chunk_id, idf * frequency * (BM25_K1 + 1) / (frequency + norm)))
        return scored

    def _hinted_chunks(self, query: str, terms: list[str], alertname: str | None, service: str | None) -> set[int]:
        """Chunks of the L0 layer's documents: an exact alert, title or service named in their front matter."""
        names = [*terms, _collapse(query.lower())]
        wanted = [("alert", name) for name in names] + [("title", name) for name in names]
        if alertname:
            wanted.append(("alert", alertname.strip().lower()))
        if service:
            wanted.append(("service", service.strip().lower()))
        clause = " OR ".join("(h.kind = ? AND h.value = ?)" for _ in wanted)
        params = [part for pair in wanted for part in pair]
        sql = f"SELECT c.id FROM kb_chunk c WHERE c.doc_id IN (SELECT h.doc_id FROM kb_hint h WHERE {clause})"
        return {chunk_id for (chunk_id,) in self.conn.execute(sql, params)}

    def _chunk_places(self, chunk_ids: list[int]) -> dict[int, tuple[str, str, int]]:
        """(directory, document path, section number) of each chunk."""
        places: dict[int, tuple[str, str, int]] = {}
        for start in range(0, len(chunk_ids), 500):  # SQLite's bound-parameter limit
            batch = chunk_ids[start : start + 500]
            marks = ", ".join("?" for _ in batch)
            for chunk_id, directory, path, seq in self.conn.execute(
                "SELECT c.id, d.directory, d.path, c.seq"
                f" FROM kb_chunk c JOIN kb_doc d ON d.id = c.doc_id WHERE c.id IN ({marks})",
                batch,
            ):
                places[chunk_id] = (directory, path, seq)
        return places

    def _chunk_rows(self, chunk_ids: list[int]) -> dict[int, dict[str, Any]]:
        marks = ", ".join("?" for _ in chunk_ids)
        cursor = self.conn.execute(
            "SELECT c.id, c.title, c.heading, c.text, d.path, d.directory"
            f" FROM kb_chunk c JOIN kb_doc d ON d.id = c.doc_id WHERE c.id IN ({marks})",
            chunk_ids,
        )
        columns = [column[0] for column in cursor.description]
        return {row[0]: dict(zip(columns, row, strict=True)) for row in cursor.fetchall()}

    @staticmethod
    def _block(row: dict[str, Any], score: float, best: float, terms: list[str], hinted: bool) -> EvidenceBlock:
        layer: Layer
        level: RelevanceLevel
        if hinted:
            layer, level = "L0", "PRECISE"
        else:
            haystack = " ".join((row["title"], row["heading"], row["text"])).lower()
            matched = sum(mentions(term, haystack) for term in terms)
            strong = score >= HIGHLY_RELEVANT_MIN_SCORE_RATIO * best
            enough = matched >= min(HIGHLY_RELEVANT_MIN_TERMS, len(terms))
            layer, level = "L1", "HIGHLY_RELEVANT" if strong and enough else "REFERENCE"
        return EvidenceBlock(
            doc=row["path"],
            title=row["title"],
            heading=row["heading"],
            text=row["text"],
            relevance_level=level,
            score=round(score, 3),
            layer=layer,
            directory=row["directory"],
        )

    # --- skills --------------------------------------------------------------

    def skills(self, directory: Path | None = None) -> list[Skill]:
        """Skills declared with `skill:` in front matter, by name."""
        scope = str(Path(directory).expanduser().resolve()) if directory is not None else None
        with self._guard():
            rows = self.conn.execute(
                "SELECT s.name, d.path, d.title, d.front_matter FROM kb_skill s JOIN kb_doc d ON d.id = s.doc_id"
                " WHERE ? IS NULL OR d.directory = ? ORDER BY s.name, d.directory, d.path",
                [scope, scope],
            ).fetchall()
        skills = []
        for name, path, title, front_matter in rows:
            fm = json.loads(front_matter)
            skills.append(
                Skill(
                    name=name,
                    doc=path,
                    title=title,
                    alerts=as_list(fm.get("alerts")),
                    services=as_list(fm.get("services")),
                )
            )
        return skills

    # --- plumbing ------------------------------------------------------------

    def _schema_version(self) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM kb_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return None
        return row[0] if row else None

    def _rebuild_schema(self) -> None:
        """Drop whatever an older version left (virtual tables first: they own their shadow tables)."""
        for kind in ("virtual", "table"):
            for name in self._tables(virtual=kind == "virtual"):
                self.conn.execute(f"DROP TABLE IF EXISTS [{name}]")
        for statement in SCHEMA:
            self.conn.execute(statement)
        self.conn.execute("INSERT INTO kb_meta (key, value) VALUES ('schema_version', ?)", [SCHEMA_VERSION])

    def _tables(self, *, virtual: bool) -> list[str]:
        rows = self.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        return [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE") == virtual]

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if conn.in_transaction:  # an error may already have ended it
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from exc

    def _corrupt(self, exc: sqlite3.DatabaseError) -> StoreError:
        return StoreError(
            f"cannot use knowledge index {self.path}: {exc}",
            hint="it is a cache of the runbooks: delete the file and index the directory again",
        )
