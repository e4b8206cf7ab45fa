"""The SeaweedFS test server (`servers/seaweed.py`) starts again on other ports when a port it found free is
taken before weed binds it — what a parallel worker's server can do in between."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import s3fs
import seaweed


def test_a_port_taken_before_weed_binds_it_starts_weed_again_elsewhere(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[list[int]] = []
    free_ports = seaweed._free_ports

    def first_s3_port_taken(n: int) -> list[int]:
        ports = free_ports(n)
        if not given:
            ports[0] = taken.getsockname()[1]  # the S3 port: another server listens there now
        given.append(ports)
        return ports

    with socket.create_server(("127.0.0.1", 0)) as taken:
        monkeypatch.setattr(seaweed, "_free_ports", first_s3_port_taken)
        with seaweed.SeaweedFS(tmp_path) as server:
            assert len(given) == 2 and server.endpoint == f"http://127.0.0.1:{given[1][0]}"
            s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options).ls("")


def test_weed_failing_for_another_reason_is_not_started_again(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[list[int]] = []
    free_ports = seaweed._free_ports
    monkeypatch.setattr(seaweed, "_free_ports", lambda n: given.append(free_ports(n)) or given[-1])
    monkeypatch.setattr(seaweed, "weed_binary", lambda: "/bin/false")  # exits at once, saying nothing
    with pytest.raises(RuntimeError, match=r"^weed exited: $"):
        seaweed.SeaweedFS(tmp_path).start()
    assert len(given) == 1
