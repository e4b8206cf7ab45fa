"""A small local OpenAI `/v1/decisions` server for tests and benchmarks (127.0.0.1 only).

Requests are answered in order from a script of behaviours; when the script is exhausted every request
gets `default`. Behaviours: `answer` (every predicate gets `probability(name)`), `refuse:<name,...>`,
an HTTP status (429, 500, 503, ...), `malformed` (not JSON), `wrong-count`, `wrong-name`, `stall`
(never answers until the client gives up). `latency` delays every answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from loopback import JsonHandler, LoopbackServer


class DecisionsServer(LoopbackServer):
    def __init__(self, script: list[str | int] | None = None, *, probability: Callable[[str], float] = lambda n: 0.5,
                 default: str | int = "answer", latency: float = 0.0) -> None:
        self.script = list(script or [])
        self.default = default
        self.probability = probability
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client address of each request: one per connection
        self.stop = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self.read_json()
                with outer._lock:
                    outer.requests.append(body)
                    outer.peers.append(self.client_address)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    action = outer.script.pop(0) if outer.script else outer.default
                if outer.latency:
                    time.sleep(outer.latency)
                status, payload = outer.respond(action, body)
                if status is None:  # stall until the client hangs up or the server stops
                    outer.stop.wait(30)
                    return
                self.send_json(status, payload, {"Retry-After": "0"} if status == 429 else None)

        super().__init__(Handler)
        self.base_url = f"{self.url}/v1"

    def respond(self, action: str | int, body: dict[str, Any]) -> tuple[int | None, bytes]:
        questions = body["questions"]
        if isinstance(action, int):
            return action, json.dumps({"error": {"message": f"injected {action}", "type": "server_error"}}).encode()
        if action == "stall":
            return None, b""
        if action == "malformed":
            return 200, b"{not json"
        answers: list[dict[str, Any]] = [{"type": "predicate", "name": q["name"], "probability": self.probability(q["name"])}
                                         for q in questions]
        if action.startswith("refuse:"):
            refused = set(action.removeprefix("refuse:").split(","))
            answers = [{"type": "refusal", "name": a["name"]} if a["name"] in refused else a for a in answers]
        elif action == "wrong-count":
            answers = answers[:-1]
        elif action == "wrong-name":
            answers[0]["name"] = "someone_else"
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                 "output_tokens": len(questions), "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 100 + len(questions)}
        return 200, json.dumps({"answers": answers, "model": body["model"], "usage": usage}).encode()

    def closing(self) -> None:
        self.stop.set()  # stalled requests give up
