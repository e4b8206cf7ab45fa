"""A small local System One (`/v1/systemone`) server for tests (127.0.0.1 only): each reply is a function
of the parsed request, so a test scripts answers, statuses and malformed bodies as it needs."""

from __future__ import annotations

import json
from collections.abc import Callable

from loopback import JsonHandler, LoopbackServer

Reply = Callable[[dict, dict], tuple[int, bytes]]


class SystemOneServer(LoopbackServer):
    """A real HTTP server on 127.0.0.1 whose reply is `reply(headers, body)`; `requests` and `peers` (the
    client address of each request: one per connection) are recorded."""

    def __init__(self, reply: Reply) -> None:
        self.requests: list[tuple[str, dict, dict]] = []
        self.peers: list[tuple[str, int]] = []
        outer = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self.read_json()
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.path, headers, body))
                outer.peers.append(self.client_address)
                self.send_json(*reply(headers, body))

        super().__init__(Handler)


def noul(p: float) -> Reply:
    """Every question answered `noul` p, with a model name and a usage."""
    def reply(headers: dict, body: dict) -> tuple[int, bytes]:
        answers = {q: {"type": "noul", "noul": p} for q in body["questions"]}
        return 200, json.dumps({"model": "jev-test", "answers": answers,
                                "usage": {"input_tokens": 10, "output_tokens": 2}}).encode()
    return reply
