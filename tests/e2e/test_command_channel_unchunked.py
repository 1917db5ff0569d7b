"""The runner's command channel over a stream that is neither chunked nor sized (an
HTTP/1.0 answer, read to the close, as some proxies send): each command is handled as it
arrives, not when the stream ends. A raw socket server stands for such a proxy; the
runner's own Client and Channel read it."""
import json
import socket
import threading
import time

from app.client.http import Client
from app.client.interactive.control import Channel

HOLD_SECONDS = 3  # the stream stays open this long after its first command


def serve_once(listener, sent):
    conn, _ = listener.accept()
    with conn:
        conn.recv(65536)
        data = json.dumps({"command_id": 1, "kind": "interrupt"})
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                     + f"id: 1\nevent: command\ndata: {data}\n\n".encode())
        sent.append(time.monotonic())
        time.sleep(HOLD_SECONDS)


def test_a_command_on_an_unchunked_stream_is_handled_as_it_arrives():
    listener = socket.create_server(("127.0.0.1", 0))
    sent, handled = [], []
    threading.Thread(target=serve_once, args=(listener, sent), daemon=True).start()
    client = Client(f"http://127.0.0.1:{listener.getsockname()[1]}", "tlw_test")
    channel = Channel(client, "S", lambda command: handled.append((time.monotonic(), command)),
                      log=lambda line: None)
    channel.start()
    try:
        deadline = time.monotonic() + HOLD_SECONDS
        while not handled and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        channel.close(0)
        listener.close()
    assert handled, "the command came only with the end of the stream"
    at, command = handled[0]
    assert command["kind"] == "interrupt" and at - sent[0] < HOLD_SECONDS / 2
