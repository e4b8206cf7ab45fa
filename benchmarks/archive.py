"""Archive throughput: save and verified restore of 1, 20 and 100 MB snapshots, on the local file store and
on a real SeaweedFS S3 server, against raw write+fsync and read+SHA-256 of the same bytes in the same run.

    python benchmarks/archive.py
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
import uuid
from pathlib import Path

import bench  # noqa: F401  (puts the repository and servers/ on sys.path)
from seaweed import SeaweedFS

from archive import FileArchive, ObjectStoreArchive, Scope
from archive.snapshot import encode
from jev import Message, TextBlock, ToolResultBlock, ToolUseBlock

SIZES_MB = (1, 20, 100)
SCOPE = Scope("bench-user", "bench-agent", "bench-session")


def snapshot_of(mb: int) -> list[Message]:
    """A history of ~`mb` MB: 4 kB tool results behind read calls."""
    chunk = ("line of tool output with identifiers like pkg/module_%d.py and numbers 12345\n" * 52)[:4000]
    out = [Message("m0", "user", (TextBlock("task"),))]
    for i in range(mb * 250):
        out.append(Message(f"c{i}", "assistant", (ToolUseBlock(f"k{i}", "read", {"path": f"f{i}.py"}),)))
        out.append(Message(f"r{i}", "tool", (ToolResultBlock(f"k{i}", "read", chunk.replace("%d", str(i))),)))
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(title: str, raw_names: tuple[str, str], archive_at, raw_write, raw_read_of) -> None:
    """One table: for each size, save / verified read / full restore against the raw operations."""
    print(title)
    print(f"{'MB':>4} {'save s':>8} {raw_names[0]:>12} {'save/raw':>9} {'verified s':>11} {raw_names[1]:>11} "
          f"{'verified/raw':>13} {'to messages s':>14} {'msgs/raw':>9}")
    for mb in SIZES_MB:
        messages = snapshot_of(mb)
        _ref, data = encode(SCOPE, messages)
        repeat = 3 if mb < 100 else 2
        archive = archive_at("restore")
        ref = archive.save(SCOPE, messages)
        raw_read = raw_read_of(archive, ref)
        t_save = best(lambda: archive_at(uuid.uuid4().hex).save(SCOPE, messages), repeat)
        t_raw_w = best(lambda: raw_write(data), repeat)
        t_bytes, t_raw_r = best(lambda: archive.restore_bytes(SCOPE, ref), repeat), best(raw_read, repeat)
        t_restore = best(lambda: archive.restore(SCOPE, ref), repeat)
        print(f"{mb:>4} {t_save:>8.3f} {t_raw_w:>12.3f} {t_save / t_raw_w:>8.2f}x {t_bytes:>11.3f} {t_raw_r:>11.3f} "
              f"{t_bytes / t_raw_r:>12.2f}x {t_restore:>14.3f} {t_restore / t_raw_r:>8.2f}x")


def local(directory: Path) -> None:
    def raw_write(data: bytes) -> None:
        with open(directory / uuid.uuid4().hex, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def raw_read_of(archive, ref):
        path = next((directory / "restore").glob(f"*/{ref}.json"))
        return lambda: hashlib.sha256(path.read_bytes()).digest()

    directory.mkdir(parents=True, exist_ok=True)
    measure("Local file store (FileArchive) vs raw write+fsync / read+SHA-256 of the same bytes",
            ("raw write s", "raw read s"), lambda name: FileArchive(directory / name, max_bytes=1 << 31),
            raw_write, raw_read_of)


def s3(server: SeaweedFS) -> None:
    import s3fs
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    measure("\nSeaweedFS over s3fs (ObjectStoreArchive) vs raw put / get+SHA-256 of the same bytes",
            ("raw put s", "raw get s"),
            lambda name: ObjectStoreArchive(f"s3://{bucket}/{name}", 1 << 31, **server.storage_options),
            lambda data: fs.pipe_file(f"{bucket}/raw-{uuid.uuid4().hex}", data),
            lambda archive, ref: (lambda: hashlib.sha256(fs.cat_file(archive.path(SCOPE, ref))).digest()))


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help, and nothing else
    with tempfile.TemporaryDirectory() as tmp:
        local(Path(tmp) / "local")
        with SeaweedFS(Path(tmp) / "seaweed") as server:
            s3(server)
    print("\nRatios are time over raw time: 1.0x is raw speed; the goal is <= 2.0x (>= 50 % of raw throughput).\n"
          "save: encode + hash + create-if-absent publish. verified: restore_bytes (read, size, SHA-256, scope and "
          "version). to messages: restore (verified, then parsed into jev.Message objects).")
