"""Writes `mini_swe_agent_responses.traj.json`: a mini-swe-agent 2.x trajectory in Responses tool-call
mode (the `litellm_response` model class, as GPT-5 runs use), made by the real mini-swe-agent 2.4.6 and
litellm against a scripted /v1/responses endpoint on 127.0.0.1 — only what the "model" answers is
invented; every message shape is the packages' own. Not part of the test suite (it needs
`pip install mini-swe-agent==2.4.6`); run it to refresh the file:
    python tests/data/make_mini_swe_agent_responses.py tests/data/mini_swe_agent_responses.traj.json
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

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_response_model import LitellmResponseModel

def call(n, command):
    return {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": "bash",
            "arguments": json.dumps({"command": command}), "status": "completed"}

def reasoning(n, text):
    return {"type": "reasoning", "id": f"rs_{n:04d}", "summary": [{"type": "summary_text", "text": text}]}

def say(n, text):
    return {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}

SCRIPT = [
    [reasoning(1, "Look at the repository first."), call(1, "ls -la")],
    [say(2, "Reading the module and its test."), call(2, "cat calc.py"), call(3, "cat test_calc.py")],
    [reasoning(4, "Run the tests to see the failure."), call(4, "python -m pytest -q test_calc.py 2>&1 | tail -5 || python test_calc.py")],
    [say(5, "No tool this turn.")],
    [call(6, "grep -n 'def add' calc.py"), call(11, "wc -l calc.py test_calc.py")],
    [reasoning(7, "Fix the sign."), call(7, "sed -i 's/return a - b/return a + b/' calc.py && cat calc.py")],
    [call(8, "python test_calc.py && echo ok")],
    [call(9, "sleep 5")],
    [call(10, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff")],
]
turn = itertools.count()

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        k = next(turn)
        out = SCRIPT[min(k, len(SCRIPT) - 1)]
        resp = {"id": f"resp_{k:04d}", "object": "response", "created_at": 1764600000 + k, "status": "completed",
                "model": "gpt-5-mini-2025-08-07", "output": out, "parallel_tool_calls": True,
                "tools": body.get("tools", []), "tool_choice": "auto", "temperature": 1.0, "top_p": 1.0,
                "usage": {"input_tokens": 1000 + 50 * k, "output_tokens": 40, "total_tokens": 1040 + 50 * k,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 16}}}
        data = json.dumps(resp).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)

def main(out):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = pathlib.Path(tempfile.mkdtemp())
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (work / "test_calc.py").write_text("from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('passed')\n")
    subprocess.run("git init -q && git add . && git -c user.email=a@b -c user.name=n commit -qm init", shell=True, cwd=work, check=True)
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    model = LitellmResponseModel(model_name="openai/gpt-5-mini", cost_tracking="ignore_errors",
                                 model_kwargs={"api_base": f"http://127.0.0.1:{server.server_port}/v1", "api_key": "unused"})
    env = LocalEnvironment(cwd=str(work), timeout=2)
    agent = DefaultAgent(model, env, **(config["agent"] | {"output_path": pathlib.Path(out), "step_limit": 20}))
    agent.run("Fix add() in calc.py so that the test passes.")
    server.shutdown()

if __name__ == "__main__":
    main(sys.argv[1])
