"""The real sparrow-decider System One server (`sparrow-decider serve`) for tests: bound to 127.0.0.1 on
a free port, its output in the given log file, stopped by its own process id."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

from ports import PortServer, PortTaken, executable, free_ports


def sparrow_binary() -> str:
    return executable("sparrow-decider", "sparrow-decider")


class SparrowDecider(PortServer):
    """`with SparrowDecider(log) as server: server.url` — a running sparrow-decider, answering as itself."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = Path(log)
        self.url = ""

    def _start_once(self) -> SparrowDecider:
        port = free_ports(1)[0]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sparrow_binary(), "serve", "--host", "127.0.0.1", "--port", str(port)],
                                         stdout=out, stderr=out)
        self.url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                said: bytes | None = urllib.request.urlopen(self.url + "/", timeout=0.5).read()
            except OSError:
                said = None
            if self.proc.poll() is not None:
                self.stop()
                text = self.log.read_text(errors="replace")
                raise (PortTaken if "Address already in use" in text else RuntimeError)(
                    f"sparrow-decider exited: {text}")
            if said is not None:
                if b"sparrow" in said:  # its health reply names its model
                    return self
                self.stop()
                raise PortTaken(f"another server answers on port {port}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sparrow-decider did not answer: {self.log.read_text(errors='replace')}")
