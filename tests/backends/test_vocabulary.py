from pathlib import Path

from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.vocabulary import term_hits

HOST = Path(__file__).resolve().parents[2] / "evcli" / "envs" / "host"


def test_term_hits_counts_where_the_logs_hold_each_word_and_drops_absent_ones():
    backend = SnapshotBackend(HOST)
    hits = term_hits(backend, ["Failed password", "no-such-word-anywhere"], backend.known_services())
    assert list(hits) == ["Failed password"]
    assert set(hits["Failed password"]) == {"auth"} and hits["Failed password"]["auth"] > 0
