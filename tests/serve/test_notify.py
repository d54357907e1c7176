"""serve/notify.py: the URL a log shows, and the deadline of a whole notification against a real slow peer."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from evcli.serve.notify import notify, shown_url
from evcli.store.db import TraceStore
from evcli.store.documents import read_document
from tests.conftest import sample


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://hooks.slack.com/services/T0001/B0002/XXXXsecret", "https://hooks.slack.com/services/***"),
        ("https://discord.com/api/webhooks/123/tok-EN", "https://discord.com/api/webhooks/***"),
        ("https://user:pass@chat.example/hooks/T0K3N", "https://chat.example/hooks/***"),
        ("http://127.0.0.1:8080/notify?token=abc&room=ops", "http://127.0.0.1:8080/notify?token=***&room=***"),
        ("http://127.0.0.1:8080/notify/", "http://127.0.0.1:8080/notify/"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://chat.example/a1b2c3d4e5#frag", "https://chat.example/***"),
    ],
)
def test_shown_url_keeps_the_host_and_plain_words_only(url, shown):
    assert shown_url(url) == shown
    assert shown_url(shown) == shown  # idempotent


def test_a_notification_ends_at_its_deadline_however_slowly_the_peer_answers(db_path, caplog):
    store = TraceStore(db_path)
    session_id = store.import_document(read_document(sample("broad-order-service")))[0]
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def dribble() -> None:  # one byte of a never-ending answer every 0.2 s: no single read ever times out
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 1000:
                if stop.wait(0.2):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    peer = threading.Thread(target=dribble, daemon=True)
    peer.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hooks/S3CRET"
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="evcli.serve"):
        notify(url, store, session_id, "A", deadline_s=1.0)
    took = time.monotonic() - started
    stop.set()
    listener.close()
    assert 0.9 < took < 2.5
    [record] = caplog.records
    assert "no complete answer within 1 s" in record.getMessage() and "S3CRET" not in record.getMessage()
