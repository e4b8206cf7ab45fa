"""Shared builders for tests: the reference fixture transcript, judges that record what they were asked."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# Bytecode is written for what the suite imports, even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): the test workers and the commands the tests start then read each module compiled
# once instead of compiling it in every process, and the install need not compile every package ahead.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# the local servers tests start (loopback only) live beside the tests, shared with the benchmarks
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))

from seaweed import SeaweedFS

from archive import Archive, FileArchive, ObjectStoreArchive, Scope
from jev import CompactionConfig, Compactor, ExecutionOptions, Message, Mode, TextBlock, ToolResultBlock, ToolUseBlock
from jev.judges import Answers, JudgeRequest

# the summaries on stderr are rich tables sized to the terminal: one width for every run (and every
# xdist worker, whose temporary paths are longer), so a test reads whole lines
os.environ["COLUMNS"] = "160"


DEV_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # the dev sets, beside the repository
DEEPSEEK = DEV_DATA / "mini-swe-agent-deepseek-dev.tar.xz"
SWEBENCH = DEV_DATA / "mini-swe-agent-swebench-dev.tar.xz"
CLAUDE_CODE = DEV_DATA / "claude-code-sessions-dev.tar.xz"
CODEX = DEV_DATA / "codex-sessions-dev.tar.xz"


def needs_data(*sets: Path) -> Callable[[Any], Any]:
    """A decorator for a test that reads the dev sets `sets`: marked `data`, and skipped,
    naming what is missing, where they are absent (a fresh clone without `../shared/data/`)."""
    missing = [p.name for p in sets if not p.exists()]
    marks = [pytest.mark.data, pytest.mark.skipif(bool(missing), reason=f"dev data not found in {DEV_DATA}: "
                                                                      f"{', '.join(missing)}")]

    def mark(test: Any) -> Any:
        for each in marks:
            test = each(test)
        return test

    return mark


def recorded_runs(count: int) -> list[dict]:
    """Real mini-swe-agent 2.x runs (the DeepSeek dev set, tool-call mode) that submitted — one that ended on
    a provider error cannot be replayed to its end — one per instance, the longest first (they pass a
    trigger), for replaying through a host's agent loop: each assistant message, and each command's
    recorded output by its call id."""
    import json
    import tarfile
    with tarfile.open(DEEPSEEK, "r|*") as tar:
        runs = [json.loads(tar.extractfile(m).read()) for m in tar if m.isfile() and m.name.endswith(".traj.json")]
    runs = [run for run in runs if run["info"]["exit_status"] == "Submitted"]
    runs.sort(key=lambda run: -len(json.dumps(run["messages"])))
    return list({run["instance_id"]: run for run in reversed(runs)}.values())[::-1][:count]


def recorded_outputs(run: dict) -> dict[str, dict]:
    """What each command of a recorded run printed, by call id (as mini-swe-agent's environment returns it)."""
    return {m["tool_call_id"]: {"output": m["extra"]["raw_output"], "returncode": m["extra"]["returncode"],
                                "exception_info": m["extra"].get("exception_info", ""), "shown": m["content"]}
            for m in run["messages"] if m.get("role") == "tool"}


def module_workspace(tmp_path: Path, files: int) -> Path:
    """A folder of `files` Python modules of 120 small functions each: what the host tests' agents read."""
    work = tmp_path / "work"
    work.mkdir()
    for i in range(files):
        (work / f"module_{i}.py").write_text("".join(f"def handler_{i}_{k}(request):\n    return {k * i}\n"
                                                     for k in range(120)))
    return work


def msg(id: str, role: str, *blocks: Any, **kw: Any) -> Message:
    return Message(id, role, tuple(blocks), **kw)


def text(s: str) -> TextBlock:
    return TextBlock(s)


def call(id: str, name: str = "read", input: Any = None) -> ToolUseBlock:
    return ToolUseBlock(id, name, {"path": f"{id}.txt"} if input is None else input)


def result(id: str, output: Any = None, name: str = "read", state: str = "success", metadata: Any = None) -> ToolResultBlock:
    return ToolResultBlock(id, name, f"evidence-{id} " * 500 if output is None else output, state, metadata)


def other_tools_history() -> list[Message]:
    """Calls as Claude Code (`Read`, `Edit`, `Bash` with a description, `TodoWrite`) and SWE-agent's editor
    (`str_replace_editor` with a `command` verb and a `path`) write them, by their tools' input schemas."""
    editor = lambda cid, verb, path: call(cid, "str_replace_editor", {"command": verb, "path": path})  # noqa: E731
    done = lambda cid, name, output: result(cid, output, name=name)  # noqa: E731
    return [
        msg("0", "user", text("Fix count() in /home/dev/app/count.py")),
        msg("1", "assistant", call("a", "Read", {"file_path": "/home/dev/app/count.py"})),
        msg("2", "user", done("a", "Read", "     1\u2192def count(items):\n     2\u2192    return len(items) - 1\n")),
        msg("3", "assistant", editor("b", "view", "/testbed/src/alpha.py")),
        msg("4", "user", done("b", "str_replace_editor", "     1\tdef alpha_entry(): pass\n")),
        msg("5", "assistant", editor("c", "view", "/testbed/src/beta.py")),
        msg("6", "user", done("c", "str_replace_editor", "     1\tdef beta_entry(): pass\n")),
        msg("7", "assistant", call("d", "Bash", {"command": "pytest -q", "description": "Run the tests"})),
        msg("8", "user", done("d", "Bash", "1 failed: test_count_three")),
        msg("9", "assistant", call("e", "Edit", {"file_path": "/home/dev/app/count.py",
                                                "old_string": "len(items) - 1", "new_string": "len(items)"})),
        msg("10", "user", done("e", "Edit", "The file /home/dev/app/count.py has been updated.")),
        msg("11", "assistant", call("f", "Bash", {"command": "pytest -q", "description": "Run them again"})),
        msg("12", "user", done("f", "Bash", "3 passed")),
        msg("13", "assistant", editor("g", "view", "/testbed/src/beta.py")),
        msg("14", "user", done("g", "str_replace_editor", "     1\tdef beta_entry(): pass\n")),
        msg("15", "assistant", call("h", "TodoWrite", {"todos": [{"content": "Fix count", "status": "completed"}]})),
        msg("16", "user", done("h", "TodoWrite", "Todos have been modified successfully.")),
    ]


def sized_history(sizes: list[int]) -> list[Message]:
    """A task, one `read` pair per size (a result of that many characters), and a closing user turn."""
    out = [msg("task", "user", text("Fix the bug."))]
    for k, n in enumerate(sizes):
        out += [msg(f"c{k}", "assistant", call(f"r{k}")), msg(f"o{k}", "tool", result(f"r{k}", "x" * n))]
    return out + [msg("end", "user", text("go on"))]


def plain(head: int = 300) -> CompactionConfig:
    """A config that applies SPEC §6 as written: no tombstones, a `head`-character cut."""
    return CompactionConfig(truncate_head_chars=head, tombstones=False)


def reference_messages() -> list[Message]:
    """The Java suite's fixture: first, three read pairs (old, preview, needed), last."""
    out = [msg("first", "user", text("Never edit generated files. Keep the count test green."))]
    for name in ("old", "preview", "needed"):
        out.append(msg(f"c-{name}", "assistant", call(name)))
        out.append(msg(f"r-{name}", "tool", result(name)))
    out.append(msg("last", "user", text("Continue with the needed evidence.")))
    return out


def reference_config(recent: int = 1, questions: int = 128, state: int = 25_000, **kw: Any) -> CompactionConfig:
    base = dict(discard_threshold=0.2, keep_threshold=0.8, preserve_recent_messages=recent, max_state_tokens=state,
                max_request_tokens=state + 5000, max_questions=questions, truncate_head_chars=30,
                minimum_reduction=0.01, max_transcript_chars=1_000_000, eligible_tools=frozenset({"read"}),
                size_exponent=0.0, tombstones=False, cost_gate=False)  # the reference: SPEC §6 as written
    base.update(kw)
    return CompactionConfig(**base)


class ScriptedJudge:
    """Answers by a function of the question id; records every request it receives."""

    def __init__(self, answer: Callable[[str], Any] | dict[str, Any] | float = 0.99, *, delay: float = 0.0,
                 fail_on: int | None = None, hook: Callable[[JudgeRequest], None] | None = None) -> None:
        if isinstance(answer, dict):
            table = answer
            self.answer: Callable[[str], Any] = lambda qid: table.get(qid, 0.99)
        elif callable(answer):
            self.answer = answer
        else:
            self.answer = lambda qid, v=answer: v
        self.delay, self.fail_on, self.hook = delay, fail_on, hook
        self.requests: list[JudgeRequest] = []
        self.cancelled = 0

    @property
    def calls(self) -> int:
        return len(self.requests)

    async def ask(self, request: JudgeRequest) -> Answers:
        self.requests.append(request)
        ordinal = len(self.requests)
        if self.hook:
            self.hook(request)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail_on is not None and ordinal == self.fail_on:
            raise RuntimeError("judge unavailable")
        return Answers({q.id: self.answer(q.id) for q in request.questions}, "fixture", 3, 1)


class CountingArchive:
    """A real FileArchive that counts what the compactor asked of it."""

    def __init__(self, root: Any, fail: str | None = None) -> None:
        self.inner = FileArchive(root)
        self.saves = 0
        self.fail = fail

    def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        self.saves += 1
        if self.fail:
            raise OSError(self.fail)
        return self.inner.save(scope, messages)

    def restore(self, scope: Scope, ref: str) -> list[Message]:
        return self.inner.restore(scope, ref)

    def restore_pair(self, scope: Scope, ref: str, call_id: str, occurrence: int | None = None) -> list[Message]:
        return self.inner.restore_pair(scope, ref, call_id, occurrence)

    def restore_bytes(self, scope: Scope, ref: str) -> bytes:
        return self.inner.restore_bytes(scope, ref)


SCOPE = Scope("user-1", "agent-1", "session-1")


def compactor(judge: Any, config: CompactionConfig | None = None, mode: Mode = Mode.ENFORCE, archive: Any = None,
              budget: float = 2.0, records: list | None = None) -> Compactor:
    observer = (lambda _ctx, r: records.append(r)) if records is not None else None
    return Compactor(judge, config or reference_config(), ExecutionOptions(mode, budget, "test", observer), archive)


@pytest.fixture
def archive(tmp_path: Any) -> CountingArchive:
    counting = CountingArchive(tmp_path / "archive")
    assert isinstance(counting, Archive)  # the double stands in for an archive: it has all an archive has
    return counting


def long_history(pairs: int, thought: str = "Looking at the next module to see how the parser handles it. ") -> list[Message]:
    """A task, then `pairs` read calls each with a thought and a 2 000-character result, then a closing
    user turn: its whole state is far over the default 25 000-token budget from ~400 pairs on."""
    out = [msg("task", "user", text("Fix the parser bug. Never edit generated files."))]
    for k in range(pairs):
        out.append(msg(f"c{k}", "assistant", text(f"{thought}Step {k}."), call(f"k{k}", input={"path": f"src/m{k}.py"})))
        out.append(msg(f"r{k}", "tool", result(f"k{k}", f"line {k}\n" * 250)))
    out.append(msg("end", "user", text("Continue.")))
    return out


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """A real SeaweedFS (S3 gateway on 127.0.0.1), one for the whole run, stopped by its own process id."""
    with SeaweedFS(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


def s3_archive(seaweed: SeaweedFS) -> tuple[Callable[[], ObjectStoreArchive], dict]:
    """A new bucket on the SeaweedFS server: a builder of archives on it, and the spec another process
    needs to open the same one."""
    import s3fs
    bucket = f"jev-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(skip_instance_cache=True, **seaweed.storage_options).mkdir(bucket)
    spec = {"kind": "url", "url": f"s3://{bucket}/archive", "options": seaweed.storage_options}
    return (lambda: ObjectStoreArchive(spec["url"], skip_instance_cache=True, **spec["options"])), spec


@dataclasses.dataclass
class Ran:
    """What a command run in process returned: its exit code and what it wrote."""

    returncode: int
    stdout: Any
    stderr: Any


def cli(argv: list[str], *, cwd: Any = None, env: dict[str, str] | None = None, input: bytes | None = None,
        text: bool = False, capture_output: bool = True, timeout: float | None = None) -> Ran:
    """`jev ARGV` in this process, through `jev.cli.main.main` (what the `jev` entry point runs), with its
    streams captured: as `subprocess.run` would give them, without starting an interpreter (0.5 s each).
    `env` replaces the environment and `cwd` the working folder for the call; a few tests keep the real
    entry point (`python -m jev.cli.main`) in a subprocess."""
    import io
    import os
    import sys

    from jev.cli.main import main
    out, err = io.BytesIO(), io.BytesIO()
    saved = (sys.stdin, sys.stdout, sys.stderr, dict(os.environ), os.getcwd())
    sys.stdin = io.TextIOWrapper(io.BytesIO(input or b""))
    sys.stdout = io.TextIOWrapper(out, write_through=True)
    sys.stderr = io.TextIOWrapper(err, write_through=True)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd or Path(__file__).resolve().parents[1])
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # --help and --version exit through argparse
            code = exc.code if isinstance(exc.code, int) else 0
    finally:
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            stream.flush()
            stream.detach()  # the buffers stay open for reading below
        sys.stdin, sys.stdout, sys.stderr = saved[:3]
        os.environ.clear()
        os.environ.update(saved[3])
        os.chdir(saved[4])
    if text:
        return Ran(code, out.getvalue().decode(), err.getvalue().decode())
    return Ran(code, out.getvalue(), err.getvalue())


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], script: str, *argv: str) -> Ran:
    """`python benchmarks/SCRIPT.py ARGV` in this process (run as `__main__`, its folder on the path) as
    `subprocess.run` would give it — exit code, stdout, stderr as text — without an interpreter's start-up and
    imports each."""
    import runpy

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{script}.py"
    monkeypatch.setattr(sys, "argv", [str(path), *argv])
    monkeypatch.setattr(sys, "path", [*sys.path, str(path.parent)])  # after the packages: `archive` stays ours
    capsys.readouterr()
    try:
        runpy.run_path(str(path), run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    out, err = capsys.readouterr()
    return Ran(code, out, err)


SERVER_MODULES = {"test_servers", "test_systemone", "test_systemone_conformance", "test_judges_remote",
                  "test_openai_decisions"}  # each starts local HTTP servers for the judges' wires
SERVER_FIXTURES = {"seaweed", "sparrow"}  # a real SeaweedFS or sparrow-decider server
CHECK_MODULES = {"test_checks", "test_docs", "test_layers"}  # ruff, mypy, the layers, the docs build


def _markers(item: pytest.Item) -> list[str]:
    """The markers a test gets from where it runs (listed in pyproject.toml, explained in docs/contributing.md):
    `integration` (a real host package's agent loop), `servers` (local servers it starts), `checks` (the
    whole-tree checks); `data` comes from `needs_data`. A test with none of these and not `slow` is `unit`."""
    module = item.module.__name__ if item.module is not None else ""
    params = getattr(getattr(item, "callspec", None), "params", {})
    marks = []
    if module.startswith("test_integration_"):
        marks.append("integration")
    if module in SERVER_MODULES or SERVER_FIXTURES & set(getattr(item, "fixturenames", ())) or params.get("kind") == "s3":
        marks.append("servers")
    if module in CHECK_MODULES:
        marks.append("checks")
    return marks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's markers from where it runs (`_markers`); then the slow tests first, those allowed the
    longest (the full training run) leading: with `-n 2` both workers start on the long tests and the short
    ones even out the end, rather than one long test starting late and running on alone (longest first; the
    order is the same in every worker)."""
    for item in items:
        marks = _markers(item)
        for name in marks:
            item.add_marker(name)
        if not marks and not any(item.get_closest_marker(m) for m in ("slow", "data")):
            item.add_marker("unit")  # the fast subset: -m unit

    def allowed(item: pytest.Item) -> float:
        marker = item.get_closest_marker("timeout")
        return float(marker.args[0]) if marker and marker.args else 0.0
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -allowed(item)))
