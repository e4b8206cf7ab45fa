"""What the servers that run as processes and bind their own ports (SeaweedFS, sparrow-decider) share:
their executable, free loopback ports, starting such a server again when a port found free was taken
before it bound it (the port is closed between the two, and a parallel test worker's server may be
handed it meanwhile), and stopping it by its process id."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class PortTaken(RuntimeError):
    """A server could not have a port it was given: another process holds it now."""


def executable(name: str, package: str) -> str:
    """The path of the installed executable `name` (on PATH or beside this Python), or an error naming
    the `package` that provides it."""
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        raise RuntimeError(f"{name!r} not found: pip install {package}")
    return found


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports free at the time of the call (held together while found)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def on_free_ports(start: Callable[[], T], attempts: int = 3) -> T:
    """`start()`, which finds its own free ports, again while it raises `PortTaken`, at most `attempts`
    times (the last `PortTaken` raised); any other failure at once."""
    for attempt in range(attempts):
        try:
            return start()
        except PortTaken:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def stop_process(proc: subprocess.Popen[bytes], group: bool = False) -> None:
    """Terminate `proc` (with `group`, its whole process group: it was started in a session of its own),
    and kill it if it has not exited after 10 s."""
    if proc.poll() is not None:
        return
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait()


class PortServer:
    """The base of such a server: `with Server(...) as server` starts it (`_start_once` on free ports, again
    while a port is taken: `on_free_ports`) and stops its process (`proc`; `group`: its whole process group)."""

    group = False  # started in a session of its own: stop the whole process group

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def _start_once(self) -> Any:
        raise NotImplementedError

    def start(self) -> Any:
        """Start it on free ports and wait until it answers (see `_start_once`)."""
        return on_free_ports(self._start_once)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, group=self.group)
        self.proc = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
