"""The test servers that bind their own ports (`servers/`: SeaweedFS, sparrow-decider) start again on other
ports when a port found free is taken before they bind it — what a parallel worker's server can do in
between — and fail at once for any other reason."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import s3fs
import seaweed
import sparrow_server
from loopback import JsonHandler, LoopbackServer


def _first_port_taken(module: object, monkeypatch: pytest.MonkeyPatch, port: int) -> list[list[int]]:
    """Make `module`'s first `free_ports` call hand out `port` first; every call's ports, recorded."""
    given: list[list[int]] = []
    free_ports = module.free_ports  # type: ignore[attr-defined]

    def first_taken(n: int) -> list[int]:
        ports = free_ports(n)
        if not given:
            ports[0] = port
        given.append(ports)
        return ports

    monkeypatch.setattr(module, "free_ports", first_taken)
    return given


def test_seaweed_given_a_taken_s3_port_starts_again_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:  # listens, never answers
        given = _first_port_taken(seaweed, monkeypatch, taken.getsockname()[1])
        with seaweed.SeaweedFS(tmp_path) as server:
            assert len(given) == 2 and server.endpoint == f"http://127.0.0.1:{given[1][0]}"
            s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options).ls("")


class _Other(JsonHandler):
    def do_GET(self) -> None:
        self.send_json(200, b'{"status": "ok", "model": "another"}')


@pytest.mark.parametrize("answering", [True, False])
def test_sparrow_given_a_taken_port_starts_again_elsewhere(answering: bool, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Taken by a server that answers (it must not pass for sparrow), or by one that never does (sparrow
    exits: the address is in use)."""
    with LoopbackServer(_Other) if answering else socket.create_server(("127.0.0.1", 0)) as other:
        port = int(other.url.rsplit(":", 1)[1]) if answering else other.getsockname()[1]
        given = _first_port_taken(sparrow_server, monkeypatch, port)
        with sparrow_server.SparrowDecider(tmp_path / "log") as server:
            assert len(given) == 2 and server.url == f"http://127.0.0.1:{given[1][0]}"
            assert server.proc is not None and server.proc.poll() is None


@pytest.mark.parametrize("module, make", [
    (seaweed, lambda tmp: seaweed.SeaweedFS(tmp)), (sparrow_server, lambda tmp: sparrow_server.SparrowDecider(tmp / "log"))])
def test_a_server_failing_for_another_reason_is_not_started_again(module, make, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[list[int]] = []
    free_ports = module.free_ports
    monkeypatch.setattr(module, "free_ports", lambda n: given.append(free_ports(n)) or given[-1])
    binary = "weed_binary" if module is seaweed else "sparrow_binary"
    monkeypatch.setattr(module, binary, lambda: "/bin/false")  # exits at once, saying nothing
    with pytest.raises(RuntimeError, match=r"exited: $"):
        make(tmp_path).start()
    assert len(given) == 1
