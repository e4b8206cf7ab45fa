"""Writes the mini-swe-agent 2.x trajectories of `tests/data/`, made by the real mini-swe-agent 2.4.6 and
litellm against a scripted endpoint on 127.0.0.1 — only what the "model" answers is invented; every
message shape is the packages' own:
- `mini_swe_agent_responses.traj.json`: Responses tool-call mode (the `litellm_response` model class,
  as GPT-5 runs use), config `mini.yaml`;
- `mini_swe_agent_text.traj.json`: text mode (`litellm_textbased`, config `mini_textbased.yaml`), the
  command fenced as ```mswea_bash_command;
- `mini_swe_agent_text_xml.traj.json`: text mode with the `<mswea_bash_command>` tags of the builtin
  `benchmarks/swebench_xml.yaml`;
and, run with mini-swe-agent 1.17.5 installed instead, `mini_swe_agent_1_xml.traj.json`: format
`mini-swe-agent-1` with the `<bash_code>` tags of 1.x's builtin `extra/swebench_xml.yaml`.
Not part of the test suite (it needs `pip install mini-swe-agent==2.4.6`, or `==1.17.5`); run it with
each to refresh them:
    python tests/data/make_mini_swe_agent_trajectories.py tests/data
"""
import itertools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network: litellm's bundled price list

import minisweagent
import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment

VERSION_1 = minisweagent.__version__.startswith("1.")
if VERSION_1:
    from minisweagent.models.litellm_model import LitellmModel
    from minisweagent.run.utils.save import save_traj
else:
    from minisweagent.models.litellm_response_model import LitellmResponseModel
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

def call(n: int, command: str) -> dict:
    """A Responses `function_call` item running `command`."""
    return {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": "bash",
            "arguments": json.dumps({"command": command}), "status": "completed"}


def reasoning(n: int, text: str) -> dict:
    """A Responses `reasoning` item with a summary."""
    return {"type": "reasoning", "id": f"rs_{n:04d}", "summary": [{"type": "summary_text", "text": text}]}


def say(n: int, text: str) -> dict:
    """A Responses assistant `message` item."""
    return {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


SCRIPT = [
    [reasoning(1, "Look at the repository first."), call(1, "ls -la")],
    [say(2, "Reading the module and its test."), call(2, "cat calc.py"), call(3, "cat test_calc.py")],
    [reasoning(4, "Run the tests to see the failure."),
     call(4, "python -m pytest -q test_calc.py 2>&1 | tail -5 || python test_calc.py")],
    [say(5, "No tool this turn.")],
    [call(6, "grep -n 'def add' calc.py"), call(11, "wc -l calc.py test_calc.py")],
    [reasoning(7, "Fix the sign."), call(7, "sed -i 's/return a - b/return a + b/' calc.py && cat calc.py")],
    [call(8, "python test_calc.py && echo ok")],
    [call(9, "sleep 5")],
    [call(10, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff")],
]
COMMANDS = ["ls -la", "cat calc.py", "python test_calc.py", None, "grep -n 'def add' calc.py",
            "sed -i 's/return a - b/return a + b/' calc.py && cat calc.py", "python test_calc.py && echo ok",
            "sleep 5", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"]


def text_answer(k: int, mode: str) -> str:
    """The k-th answer of a text-mode model: a THOUGHT and one command (none, or two, on the turns that
    make format errors)."""
    command = COMMANDS[min(k, len(COMMANDS) - 1)]
    block = {"xml": lambda c: f"<mswea_bash_command>{c}</mswea_bash_command>",
             "1-xml": lambda c: f"<bash_code>{c}</bash_code>",
             "text": lambda c: f"```mswea_bash_command\n{c}\n```"}[mode]
    if command is None:
        return "THOUGHT: two things at once.\n\n" + block("ls") + "\n" + block("pwd")
    return f"THOUGHT: step {k}.\n\n{block(command)}"


STATE = {"mode": "responses", "turn": itertools.count()}  # what the endpoint answers, and how far it is


class Handler(BaseHTTPRequestHandler):
    """The scripted endpoint: /v1/responses answers from SCRIPT, /v1/chat/completions from `text_answer`."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        k, mode = next(STATE["turn"]), STATE["mode"]
        if mode != "responses":
            self.answer({"id": f"chatcmpl-{k:04d}", "object": "chat.completion", "created": 1764600000 + k,
                         "model": "gpt-4.1-mini-2025-04-14", "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text_answer(k, mode)}}],
                         "usage": {"prompt_tokens": 900 + 50 * k, "completion_tokens": 30, "total_tokens": 930 + 50 * k}})
            return
        self.answer({"id": f"resp_{k:04d}", "object": "response", "created_at": 1764600000 + k, "status": "completed",
                     "model": "gpt-5-mini-2025-08-07", "output": SCRIPT[min(k, len(SCRIPT) - 1)],
                     "parallel_tool_calls": True, "tools": body.get("tools", []), "tool_choice": "auto",
                     "temperature": 1.0, "top_p": 1.0,
                     "usage": {"input_tokens": 1000 + 50 * k, "output_tokens": 40, "total_tokens": 1040 + 50 * k,
                               "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens_details": {"reasoning_tokens": 16}}})

    def answer(self, response: dict) -> None:
        data = json.dumps(response).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def workspace() -> pathlib.Path:
    """A fresh git repository with the bug the scripted agent fixes."""
    work = pathlib.Path(tempfile.mkdtemp())
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (work / "test_calc.py").write_text("from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('passed')\n")
    subprocess.run("git init -q && git add . && git -c user.email=a@b -c user.name=n commit -qm init", shell=True,
                   cwd=work, check=True)
    return work


def run(out: pathlib.Path, mode: str, port: int) -> None:
    """mini-swe-agent 2.x in `mode` (responses, text, xml) with its builtin config for it, saved as 2.x saves."""
    STATE.update(mode=mode, turn=itertools.count())
    work = workspace()
    name = {"responses": "mini.yaml", "text": "mini_textbased.yaml", "xml": "benchmarks/swebench_xml.yaml"}[mode]
    config = yaml.safe_load((builtin_config_dir / name).read_text())
    endpoint = {"api_base": f"http://127.0.0.1:{port}/v1", "api_key": "unused"}
    if mode == "responses":
        model = LitellmResponseModel(model_name="openai/gpt-5-mini", cost_tracking="ignore_errors", model_kwargs=endpoint)
    else:
        settings = {k: v for k, v in config["model"].items() if k in ("observation_template", "format_error_template",
                                                                      "action_regex")}
        model = LitellmTextbasedModel(model_name="openai/gpt-4.1-mini", cost_tracking="ignore_errors",
                                      model_kwargs=endpoint, **settings)
    env = LocalEnvironment(cwd=str(work), timeout=2)
    agent_config = {k: v for k, v in config["agent"].items() if k != "mode"}
    agent = DefaultAgent(model, env, **(agent_config | {"output_path": out, "step_limit": 20}))
    agent.run("Fix add() in calc.py so that the test passes.")


def run_1(out: pathlib.Path, port: int) -> None:
    """mini-swe-agent 1.x: the agent in text mode with 1.x's `extra/swebench_xml.yaml`, saved as 1.x saves."""
    STATE.update(mode="1-xml", turn=itertools.count())
    work = workspace()
    config = yaml.safe_load((builtin_config_dir / "extra" / "swebench_xml.yaml").read_text())
    model = LitellmModel(model_name="openai/gpt-4.1-mini", cost_tracking="ignore_errors",
                         model_kwargs={"api_base": f"http://127.0.0.1:{port}/v1", "api_key": "unused"})
    agent = DefaultAgent(model, LocalEnvironment(cwd=str(work), timeout=2), **(config["agent"] | {"step_limit": 20}))
    exit_status, result = agent.run("Fix add() in calc.py so that the test passes.")
    save_traj(agent, out, print_path=False, exit_status=exit_status, result=result, instance_id="demo__calc-1")


def main(folder: str) -> None:
    """Every trajectory the installed mini-swe-agent's major version makes, into `folder`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if VERSION_1:
        run_1(pathlib.Path(folder) / "mini_swe_agent_1_xml.traj.json", server.server_port)
        server.shutdown()
        return
    for mode, name in (("responses", "mini_swe_agent_responses"), ("text", "mini_swe_agent_text"),
                       ("xml", "mini_swe_agent_text_xml")):
        run(pathlib.Path(folder) / f"{name}.traj.json", mode, server.server_port)
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
