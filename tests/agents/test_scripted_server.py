"""The scripted model server leaves nothing behind: after stop() no thread of it
runs and a client that still holds a kept-alive connection cannot make it print."""

from __future__ import annotations

import http.client
import json
import threading

from tests.agents.scripted_server import ScriptedServer, answer


def _post(connection: http.client.HTTPConnection) -> dict:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    return json.loads(connection.getresponse().read())


def test_stop_joins_every_thread_even_with_a_kept_alive_connection(capfd):
    before = set(threading.enumerate())
    server = ScriptedServer([answer("one"), answer("two")]).start()
    host, port = server.url.removeprefix("http://").split(":")
    client = http.client.HTTPConnection(host, int(port), timeout=5)
    assert _post(client)["choices"][0]["message"]["content"] == "one"
    assert len(set(threading.enumerate()) - before) == 2  # the serving thread and the kept-alive handler

    server.stop()
    assert set(threading.enumerate()) - before == set()
    client.close()  # the client drops the connection only now: nobody is left to report it
    assert capfd.readouterr().err == ""
    assert server.handler_errors == []


def test_a_client_that_gives_up_mid_reply_is_not_an_error(capfd):
    with ScriptedServer([answer("slow", sleep=0.3)]) as server:
        host, port = server.url.removeprefix("http://").split(":")
        client = http.client.HTTPConnection(host, int(port), timeout=0.05)
        try:
            _post(client)
        except TimeoutError:
            pass
        client.close()
    assert capfd.readouterr().err == ""
    assert server.handler_errors == []
