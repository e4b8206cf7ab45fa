"""How often a proxy's "needed" is genuine: a sample of the cases where the judge let a result go that the
proxy called needed later, shown with the evidence, for a person to read; then the share read as genuine,
with Wilson 95 % intervals.

    python benchmarks/proxy_precision.py sample [--per-cell 24] [--out benchmarks/proxy_precision_sample.md]
    python benchmarks/proxy_precision.py score [--verdicts benchmarks/proxy_precision_verdicts.json]

`sample` scores both dev sets with the shipped judge at the yardstick's point (budget mode, half the
candidate result characters, points with 30 000 of them), keeps the let-go results each proxy calls needed
after the point, draws `--per-cell` per set and proxy (the first of one seeded shuffle, so a larger
sample keeps a smaller one's cases), and writes each case: the call, the proxy's evidence (the first
use after the point: a token this result alone introduced and the command that wrote it; a word or
re-run; a copied line, re-run or edit), and the result's lines around it.
`score` reads the verdicts a reader wrote (`{"case id": {"genuine": true, "why": "..."}}`) and prints the
table. A verdict is "genuine" when the agent, at the later use, needed something only this result gave
it — not prose, not boilerplate, not its own code echoed back, not something the task or a later result
also showed.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np
import orjson

from calibration.dataset import build_rows, trajectories
from calibration.labels import (
    ALT_LABEL_VERSION,
    LABEL_VERSION,
    STRICT_LABEL_VERSION,
    later_reuse,
    pair_uses,
    strict_uses,
)
from calibration.rarity import Rarity
from calibration.train_local import scores_of
from calibration.yardstick import let_go, points
from jev.judges.features import SCAN_CHARS, command_text
from jev.judges.local import load_model
from jev.model.transcript import ToolUseBlock
from jev.reading.analysis import analyze

DATA = ROOT.parent / "shared" / "data"
SETS = {"SWE": DATA / "mini-swe-agent-swebench-dev.tar.xz", "DeepSeek": DATA / "mini-swe-agent-deepseek-dev.tar.xz"}
PROXIES = (LABEL_VERSION, ALT_LABEL_VERSION, STRICT_LABEL_VERSION)
SAMPLE = ROOT / "benchmarks" / "proxy_precision_sample.md"
VERDICTS = ROOT / "benchmarks" / "proxy_precision_verdicts.json"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def cases(name: str, source: Path, per_cell: int, seed: int = 0) -> list[dict]:
    """`per_cell` let-go, proxy-needed cases per proxy of one dev set, with their evidence."""
    model = load_model()
    rows = build_rows(source, workers=2, scan_chars=model.get("scan_chars", SCAN_CHARS), rarity=Rarity.of(model.get("rarity")))
    p_result, p_call = scores_of(model, rows.X)
    needed = {LABEL_VERSION: rows.needed_result, ALT_LABEL_VERSION: rows.needed_result_alt,
              STRICT_LABEL_VERSION: rows.needed_strict}
    rng = np.random.default_rng(seed)
    found: dict[str, list[int]] = defaultdict(list)
    for point in points(rows, 30_000):
        gone = point.rows[let_go(rows, point, p_result, p_call, 0.5, rng, rows.needed_result, True,
                                 model["size_exponent"])["judge"]]
        for proxy, flags in needed.items():
            found[proxy].extend(int(i) for i in gone if flags[i])
    # the first `per_cell` of one seeded shuffle per proxy: a larger sample keeps a smaller one's cases
    picked = {proxy: sorted(np.random.default_rng(seed).permutation(ix)[:per_cell].tolist())
              for proxy, ix in found.items()}
    wanted: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for proxy, ix in picked.items():
        for i in ix:
            wanted[str(rows.sessions[i])].append((proxy, i))
    out = []
    common = Rarity.of(model.get("rarity")).tokens
    for session, messages in trajectories(source):
        if session not in wanted:
            continue
        t = analyze(messages)
        logs: dict[str, dict] = {LABEL_VERSION: {}, ALT_LABEL_VERSION: {}, STRICT_LABEL_VERSION: {}}
        pair_uses(t, logs[LABEL_VERSION])
        later_reuse(t, logs[ALT_LABEL_VERSION])
        strict_uses(t, common, logs[STRICT_LABEL_VERSION])
        pairs = {p.key: p for p in t.pairs}
        for proxy, i in wanted[session]:
            key, at = str(rows.keys[i]), int(rows.points[i])
            pair = pairs[key]
            use_at, what = min((u for u in logs[proxy].get(key, []) if u[0] > at), key=lambda u: u[0])
            what = "re-ran the same command" if what is None else what
            token = what if proxy != ALT_LABEL_VERSION else what.split(": ", 1)[-1].removeprefix("edited ")
            later = next((command_text(b.input) for b in t.messages[use_at].content
                          if isinstance(b, ToolUseBlock) and token in command_text(b.input)),
                         " ".join(b.text for b in t.messages[use_at].content if hasattr(b, "text") and
                                  not isinstance(b, ToolUseBlock))[:400])
            lines = pair.result.text.splitlines()
            hit = next((k for k, line in enumerate(lines) if token[:60] in line), 0)
            out.append({"id": f"{name}:{proxy}:{session}:{key}@{at}", "set": name, "proxy": proxy,
                        "call": command_text(pair.call.input)[:300], "evidence": what, "used_at": use_at,
                        "point": at, "later": later[:600],
                        "result": "\n".join(lines[max(0, hit - 3): hit + 4])[:1200],
                        "result_chars": len(pair.result.text)})
    return sorted(out, key=lambda c: (c["proxy"], c["id"]))


def sample(per_cell: int, out: Path) -> None:
    lines = ["# Proxy precision: cases to read", "",
             "Each case: a result the shipped judge let go at the yardstick's point that the proxy calls needed "
             "later. Verdicts go in `proxy_precision_verdicts.json`.", ""]
    for name, source in SETS.items():
        for case in cases(name, source, per_cell):
            lines += [f"## {case['id']}", "", f"- call: `{case['call']}`", f"- evidence: `{case['evidence']}` "
                      f"(message {case['used_at']}, point {case['point']})", "", "later use:", "", "```",
                      case["later"], "```", "", f"result ({case['result_chars']} chars), around it:", "", "```",
                      case["result"], "```", ""]
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}", file=sys.stderr)


def score(verdicts: Path) -> None:
    found = orjson.loads(verdicts.read_bytes())
    tally: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for case, verdict in found.items():
        name, proxy = case.split(":")[:2]
        tally[(proxy, name)].append(bool(verdict["genuine"]))
    print("| proxy | " + " | ".join(SETS) + " |")
    print("|---|" + "---|" * len(SETS))
    for proxy in PROXIES:
        cells = []
        for name in SETS:
            got = tally.get((proxy, name), [])
            lo, hi = wilson(sum(got), len(got))
            cells.append(f"{sum(got)}/{len(got)} = {sum(got) / len(got):.2f} [{lo:.2f}, {hi:.2f}]" if got else "—")
        print(f"| {proxy} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--per-cell", type=int, default=24)
    s.add_argument("--out", type=Path, default=SAMPLE)
    v = sub.add_parser("score")
    v.add_argument("--verdicts", type=Path, default=VERDICTS)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.per_cell, args.out)
    else:
        score(args.verdicts)


if __name__ == "__main__":
    main()
