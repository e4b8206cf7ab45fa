"""The yardstick: does the judge let go of fewer later-needed results than recency at a matched budget, on
sessions and agent models it never saw?

Decision points every 8 pairs (newest 3 protected) on both dev sets; only points a host would trigger on
(candidate results of at least `--min-chars` characters) count. At each point the product lets go of
results by its own ranking — budget mode (`jev.policy.budget`, `target_reduction=--budget`, size-aware,
default thresholds) on the local judge's probabilities — and every other policy then lets go of whole
results in its own order until it has removed at least as many characters (net of kept heads and
markers): recency (oldest first), biggest-first, random, the oracle (unneeded first, biggest saving
first), and drop-all for reference. Main table: a let-go result saves the same characters under every
policy — what the product's let-go of that pair saves (TRUNCATE_RESULT keeps a 300-character head and a
marker when the judge says the call is needed, else DROP_PAIR) — so the policies differ only in which
results they pick. Second table: the other policies drop whole results (no head kept), which charges
the judge for the heads it keeps. L = the share of later-needed results let go, pooled over points; 95 % bootstrap
intervals resample sessions (DeepSeek: instances, the runs of one instance are one group). Gap closed =
(L_recency - L_judge) / (L_recency - L_oracle).

Cells: two label proxies built differently (labels-v1: words with last-provider attribution;
labels-v2-reuse: copied output lines, re-runs, edits of files read) × {within each model: 5-fold
group cross-validation; across models: trained on one set, tested on the other, both ways}. The judge is
trained as `calibration.train_local` trains the shipped one (on either proxy's "needed").

    python benchmarks/quality.py [--budget 0.5] [--min-chars 30000] [--boot 1000] [--out-md FILE] [--in-sample]
                                 [--why-lost] [--identifiers]
    python benchmarks/quality.py --held-out PATH [--held-out PATH ...] [--model FILE]
    python benchmarks/quality.py --labelled FILE [--labelled FILE ...]

`--held-out PATH` scores the shipped weights (or `--model FILE`, weights `calibration.train_local` wrote)
on sessions they never saw — a `.tar`/`.tar.xz` or a folder of mini-swe-agent trajectories in any of its
modes, as `python -m calibration.train_local --data` reads them — with the same policies, proxies and
table, one cell per PATH; nothing is trained and the dev sets are not read. This is how the claim is
checked on sessions and agent models neither dev set contains.

`--labelled FILE` scores **any judge** — a remote System One or OpenAI Decisions judge too — from the
rollout's own files: `jev replay SESSIONS --judge J --records R` (SHADOW decision records, every 8 pairs),
then `jev label R --transcripts SESSIONS --out FILE` (labels-v1, and labels-v2-reuse as
`needed_result_reuse`). Each file is one cell: the judge that made its records, its recorded scores at
every decision point, the same policies, proxies and tables (a refused pair reads as one never let go;
a file labelled before `needed_result_reuse` existed gets the labels-v1 rows only). Nothing is trained,
no judge is called, the dev sets are not read.

`--why-lost` adds a diagnostic: of the later-needed results the judge and recency let go (labels-v1), what
first made each needed after its point — a re-run, or a word first written then (a plain word of letters
alone, or another) — and whether that word sits in the ends of the result the judge's features read.
`--identifiers` adds a diagnostic proxy to every cell: labels-v1 counting only the uses that look like
identifiers — re-runs, and words with a `_`, `/`, digit, inner `.` or inner capital once a trailing
`.`/`-` is stripped — so prose words ("function", "clause.") no longer make a result needed. A diagnostic
of the proxy's noise, not a third proxy: the judge is not trained on it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sklearn.model_selection import GroupKFold  # noqa: E402

from calibration.dataset import Rows, build_rows, group_of, trajectories  # noqa: E402
from calibration.join import read_records  # noqa: E402
from calibration.labels import pair_uses  # noqa: E402
from calibration.train_local import calibrated, checked_scan_chars, columns, corpus_name, fit_specs  # noqa: E402
from jev.apply import SHORT_RESULT_SLACK, truncation_marker  # noqa: E402
from jev.errors import ConfigError  # noqa: E402
from jev.judges.features import FEATURE_NAMES, SCAN_CHARS  # noqa: E402
from jev.judges.local import MODEL, load_model, score  # noqa: E402
from jev.policy import CompactionConfig, Judged, budget  # noqa: E402
from jev.transcript import analyze  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = {"SWE (Gemini)": DATA / "mini-swe-agent-swebench-dev.tar.xz",
        "DeepSeek": DATA / "mini-swe-agent-deepseek-dev.tar.xz"}
POLICIES = ("judge", "recency", "biggest-first", "random", "oracle", "drop-all")
PROXIES = ("labels-v1", "labels-v2-reuse")


def calibrated_heads(train: Rows) -> tuple[dict, dict]:
    """Both heads fitted on `train` as `python -m calibration.train_local` fits the shipped ones."""
    heads = fit_specs(train)
    return heads["keep_result"], heads["keep_call"]


def probabilities(heads: tuple[dict, dict], X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(result needed), P(call needed) for full feature rows `X`, as the judge scores them."""
    return calibrated(heads[0], columns(X)), calibrated(heads[1], columns(X))


def model_scores(model: dict, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(result needed), P(call needed) of a model document's heads (`jev.judges.local.load_model`) for full
    feature rows `X` (`Rows.X`), scored as the local judge scores them."""
    cols = np.asarray([FEATURE_NAMES.index(name) for name in model["features"]])
    return tuple(score(model["heads"][head], X[:, cols], model["version"])  # type: ignore[return-value]
                 for head in ("keep_result", "keep_call"))


def held_out_cells(sources: list[str], model_path: str | None, workers: int = 2
                   ) -> list[tuple[str, Rows, Path, np.ndarray, np.ndarray]]:
    """(title, rows, source, P(result needed), P(call needed)) per source of trajectories the weights never
    saw: the shipped weights, or the file at `model_path`, scored reading the depth they were trained on."""
    model = load_model(model_path)
    judge = MODEL if model_path is None else Path(model_path).name
    cells = []
    for source in sources:
        rows = build_rows(source, workers=workers, scan_chars=model["scan_chars"])
        cells.append((f"{judge} → {corpus_name(source)} (held out)", rows, Path(source), *model_scores(model, rows.X)))
    return cells


def labelled_cell(source: str) -> tuple[str, Rows, Path, np.ndarray, np.ndarray]:
    """(title, rows, source, P(result needed), P(call needed)) from a file of labelled rows (`jev label` over
    `jev replay` records): the recorded scores of whichever judge made them. A refused pair (no score)
    reads as 1.0, so no policy of the judge's lets it go, as the compactor keeps it."""
    records = list(read_records(source))
    judges = sorted({str(r.get("judge") or "") for r in records})
    if not records:
        raise ValueError(f"{source}: no labelled rows")
    if len(judges) > 1:
        raise ValueError(f"{source}: labelled rows of several judges ({', '.join(judges)}): one file per judge")
    missing = [k for k in ("session_id", "decision_point", "key", "call_id", "result_chars", "needed_result",
                           "needed_call") if any(k not in r for r in records)]
    if missing:
        raise ValueError(f"{source}: not labelled rows from jev label (no {', '.join(missing)})")

    def score(r: dict, name: str) -> float:
        value = r.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 1.0

    alt = [r.get("needed_result_reuse") for r in records]
    rows = Rows(np.zeros((len(records), 0)), np.asarray([bool(r["needed_result"]) for r in records]),
                np.asarray([bool(r["needed_call"]) for r in records]),
                np.asarray([str(r["session_id"]) for r in records]), np.asarray([str(r["key"]) for r in records]),
                np.asarray([int(r["decision_point"]) for r in records]),
                np.asarray([int(r["result_chars"]) for r in records]),
                None if any(a is None for a in alt) else np.asarray(alt, dtype=bool), None,
                np.asarray([str(r["call_id"]) for r in records]))
    p_result = np.asarray([score(r, "keep_result") for r in records])
    p_call = np.asarray([score(r, "keep_call") for r in records])
    return f"{judges[0] or 'judge'} → {corpus_name(source)} (labelled)", rows, Path(source), p_result, p_call


def out_of_fold(rows: Rows) -> tuple[np.ndarray, np.ndarray]:
    """Scores for every row from a judge trained without its group (5 group folds)."""
    groups = np.asarray([group_of(s) for s in rows.sessions])
    p_result, p_call = np.zeros(len(rows.X)), np.zeros(len(rows.X))
    for tr, te in GroupKFold(5).split(rows.X, rows.needed_result, groups):
        p_result[te], p_call[te] = probabilities(calibrated_heads(rows.take(tr)), rows.X[te])
    return p_result, p_call


@dataclass(frozen=True)
class Point:
    group: str
    rows: np.ndarray  # row indices of the candidates at this point


def points(rows: Rows, min_chars: int) -> list[Point]:
    by_point: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, (s, p) in enumerate(zip(rows.sessions, rows.points, strict=True)):
        by_point[(s, int(p))].append(i)
    return [Point(group_of(s), np.asarray(ix)) for (s, _), ix in sorted(by_point.items())
            if rows.result_chars[ix].sum() >= min_chars]


def _matched(order: np.ndarray, saves: np.ndarray, target: int) -> np.ndarray:
    """The first results in `order` whose savings reach `target` (none for a target of 0)."""
    if target <= 0:
        return order[:0]
    reach = np.searchsorted(np.cumsum(saves[order]), target)
    return order[: reach + 1]


def let_go(rows: Rows, point: Point, p_result: np.ndarray, p_call: np.ndarray, share: float,
           rng: np.random.Generator, needed: np.ndarray, same_form: bool) -> dict[str, np.ndarray]:
    """Indices let go at one point by every policy, the others matched to the characters the judge removed.
    `same_form`: a let-go result saves what the product's let-go of that pair saves under every policy
    (its head and marker kept when the judge truncates), so policies differ only in which results they
    pick; else the other policies drop whole results."""
    ix = point.rows
    chars = rows.result_chars[ix].astype(int)
    default = CompactionConfig()
    head = default.truncate_head_chars
    marker = np.asarray([len(truncation_marker(str(c), default)) for c in rows.call_ids[ix]])  # as the product cuts
    cut_saves = np.where(chars > head + SHORT_RESULT_SLACK, chars - (head + 1 + marker), 0)
    keys = rows.keys[ix]
    config = CompactionConfig(target_reduction=share)
    chosen, removed, _ = budget([Judged(str(k), float(c), float(r), "bash", int(n), int(t))
                                 for k, c, r, n, t in zip(keys, p_call[ix], p_result[ix], chars, cut_saves,
                                                          strict=True)], config)
    judge = np.asarray([j for j, k in enumerate(keys) if chosen[str(k)][0].value != "KEEP"], dtype=int)
    truncates = p_call[ix] >= config.keep_threshold
    saves = np.where(truncates, cut_saves, chars) if same_form else chars
    age = np.argsort([int(str(k)[1:]) for k in keys], kind="stable")
    need = needed[ix]
    oracle = np.lexsort((-saves, need))  # unneeded first, biggest saving first within
    return {"judge": judge,
            "recency": _matched(age, saves, removed),
            "biggest-first": _matched(np.argsort(-saves, kind="stable"), saves, removed),
            "random": _matched(rng.permutation(len(ix)), saves, removed),
            "oracle": _matched(oracle, saves, removed),
            "drop-all": np.arange(len(ix))}


def evaluate(rows: Rows, p_result: np.ndarray, p_call: np.ndarray, share: float, min_chars: int, boot: int,
             same_form: bool = True, seed: int = 0, extra: dict[str, np.ndarray] | None = None
             ) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Per proxy (the two, then any `extra` labels of the same rows): L per policy and the gap closed, each
    (point estimate, 2.5 %, 97.5 %)."""
    pts = points(rows, min_chars)
    groups = sorted({p.group for p in pts})
    gi = {g: k for k, g in enumerate(groups)}
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    proxies = {"labels-v1": rows.needed_result, **({"labels-v2-reuse": rows.needed_result_alt}
                                                   if rows.needed_result_alt is not None else {}), **(extra or {})}
    for proxy, needed in proxies.items():
        rng = np.random.default_rng(seed)
        lost = np.zeros((len(POLICIES), len(groups)))
        total = np.zeros(len(groups))
        for point in pts:
            need = needed[point.rows]
            g = gi[point.group]
            total[g] += need.sum()
            for k, (name, gone) in enumerate(let_go(rows, point, p_result, p_call, share, rng, needed,
                                                                       same_form).items()):
                assert name == POLICIES[k]
                lost[k, g] += need[gone].sum()
        draws = np.random.default_rng(seed + 1).multinomial(len(groups), np.full(len(groups), 1 / len(groups)),
                                                           size=boot)
        with np.errstate(invalid="ignore", divide="ignore"):  # a draw without needed results has no L (NaN)
            L = lost.sum(1) / total.sum()
            Lb = (draws @ lost.T) / (draws @ total)[:, None]  # boot x policies
        jr, rr, orc = POLICIES.index("judge"), POLICIES.index("recency"), POLICIES.index("oracle")

        def gap(values: np.ndarray) -> np.ndarray:
            """The gap closed; NaN where recency does no worse than the oracle (there is no gap to close)."""
            width = values[..., rr] - values[..., orc]
            return np.where(width > 0, (values[..., rr] - values[..., jr]) / np.where(width > 0, width, 1.0), np.nan)

        def interval(values: np.ndarray) -> list[float]:
            finite = values[np.isfinite(values)]
            return np.quantile(finite, [0.025, 0.975]).tolist() if len(finite) else [float("nan")] * 2

        cell = {name: (float(L[k]), *interval(Lb[:, k])) for k, name in enumerate(POLICIES)}
        cell["gap closed"] = (float(gap(L)), *interval(gap(Lb)))
        cell["points"] = (float(len(pts)), float(len(groups)), float(total.sum()))
        out[proxy] = cell
    return out


_PLAIN = re.compile(r"[A-Za-z]+")
_IDENTIFIER = re.compile(r"[_/0-9]|\.\w|[a-z][A-Z]")
IDENTIFIERS = "labels-v1, identifiers only (diagnostic)"


def identifier_needed(rows: Rows, source: Path) -> np.ndarray:
    """Per row, labels-v1 counting only identifier-shaped uses after the row's point: re-runs, and words
    that keep a `_`, `/`, digit, inner `.` or inner capital once a trailing `.`/`-` is stripped."""
    at: dict[str, list[int]] = defaultdict(list)
    for i, session in enumerate(rows.sessions):
        at[str(session)].append(i)
    out = np.zeros(len(rows.sessions), dtype=bool)
    for session, messages in trajectories(source):
        if session not in at:
            continue
        log: dict[str, list[tuple[int, str | None]]] = {}
        pair_uses(analyze(messages), log)
        last = {key: max((k for k, word in uses if word is None or _IDENTIFIER.search(word.rstrip(".-"))),
                         default=-1) for key, uses in log.items()}
        for i in at[session]:
            out[i] = last.get(str(rows.keys[i]), -1) > rows.points[i]
    return out


def why_lost(rows: Rows, p_result: np.ndarray, p_call: np.ndarray, source: Path, share: float, min_chars: int,
             scan_chars: int) -> dict[str, Counter]:
    """Per policy (judge, recency): of the labels-v1-needed results it lets go, what first made each needed
    after its point — `rerun`, `plain` (a word of letters alone) or `other` word — and, of the words, how
    many sit within `scan_chars` of the result's ends (`in ends`)."""
    wanted: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    rng = np.random.default_rng(0)
    for point in points(rows, min_chars):
        gone = let_go(rows, point, p_result, p_call, share, rng, rows.needed_result, True)
        for policy in ("judge", "recency"):
            for i in point.rows[gone[policy]]:
                if rows.needed_result[i]:
                    wanted[str(rows.sessions[i])].append((policy, str(rows.keys[i]), int(rows.points[i])))
    out = {"judge": Counter(), "recency": Counter()}
    for session, messages in trajectories(source):
        if session not in wanted:
            continue
        transcript = analyze(messages)
        log: dict[str, list[tuple[int, str | None]]] = {}
        pair_uses(transcript, log)
        texts = {pair.key: pair.result.text for pair in transcript.pairs}
        for policy, key, at in wanted[session]:
            _k, word = next(use for use in log[key] if use[0] > at)  # needed after `at`: such a use exists
            tally = out[policy]
            tally["needed let go"] += 1
            if word is None:
                tally["rerun"] += 1
                continue
            tally["plain" if _PLAIN.fullmatch(word) else "other"] += 1
            text, where = texts[key], texts[key].find(word)
            tally["in ends"] += where < scan_chars or where + len(word) > len(text) - scan_chars
    return out


def held_out_arguments(parser: argparse.ArgumentParser) -> None:
    """`--held-out PATH` (repeatable), `--model FILE` and `--labelled FILE` (repeatable): this script's and
    `equal_risk.py`'s."""
    parser.add_argument("--held-out", action="append", metavar="PATH",
                        help="score weights on these trajectories instead of the dev sets (a .tar/.tar.xz or a "
                             "folder of mini-swe-agent trajectories; repeat for several; nothing is trained)")
    parser.add_argument("--model", metavar="FILE",
                        help="with --held-out: weights written by `python -m calibration.train_local` (default: "
                             "the shipped ones)")
    parser.add_argument("--labelled", action="append", metavar="FILE",
                        help="score the judge whose records `jev label` labelled here (any judge, remote ones "
                             "too; repeat for several; nothing is trained, no judge is called)")


def labelled_cells(parser: argparse.ArgumentParser, args: argparse.Namespace
                   ) -> list[tuple[str, Rows, Path, np.ndarray, np.ndarray]]:
    """A cell per `--labelled` file (`labelled_cell`), or the parser exits naming the flag and what is wrong."""
    if args.held_out or args.model:
        parser.error("--labelled scores recorded judgments as they are: --held-out and --model score weights on "
                     "trajectories, so they do not go with it")
    try:
        return [labelled_cell(source) for source in args.labelled]
    except FileNotFoundError as exc:
        parser.error(f"--labelled: no such file ({exc})")
    except (ValueError, KeyError, TypeError) as exc:
        parser.error(f"--labelled: {exc}")
    raise AssertionError("parser.error exits")


def checked_held_out(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The `--held-out` sources as given, or the parser exits naming the flag and the rule (before anything
    is read)."""
    if args.model and not args.held_out:
        parser.error("--model goes with --held-out (the dev-set cells retrain their judges)")
    missing = [s for s in args.held_out or () if not Path(s).exists()]
    if missing:
        parser.error(f"--held-out: {', '.join(missing)} not found")
    if args.model:
        try:
            load_model(args.model)
        except ConfigError as exc:
            parser.error(f"--model: {exc}")
    return list(args.held_out or ())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.5, help="target_reduction of the judge at each point")
    parser.add_argument("--min-chars", type=int, default=30_000, help="points with at least this many candidate "
                                                                      "result characters")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap resamples of sessions/instances")
    parser.add_argument("--out-md", help="also write the table as Markdown here")
    parser.add_argument("--in-sample", action="store_true",
                        help="also score a judge fitted on the very sessions it is scored on (a diagnostic: an upper "
                             "bound on what this recipe and these features rank, never a claim)")
    parser.add_argument("--why-lost", action="store_true",
                        help="also say, for the needed results the judge and recency let go (labels-v1), what "
                             "first made each needed and whether it sits in the ends the judge reads")
    parser.add_argument("--identifiers", action="store_true",
                        help="also score every cell on labels-v1 counting identifier-shaped uses only (a diagnostic "
                             "of the proxy's prose-word noise)")
    parser.add_argument("--scan-chars", type=int, default=SCAN_CHARS, metavar="N",
                        help=f"characters of each result end the judge's features read (default {SCAN_CHARS}, "
                             "the shipped judge's)")
    held_out_arguments(parser)
    args = parser.parse_args()
    checked_scan_chars(parser, args.scan_chars)
    sources = checked_held_out(parser, args)
    if sources and (args.in_sample or args.scan_chars != SCAN_CHARS):
        parser.error("--held-out scores weights as they are: --in-sample and --scan-chars retrain, so they do not "
                     "go with it (train weights with `python -m calibration.train_local --scan-chars N`, then "
                     "pass them as --model)")
    if args.labelled and (args.in_sample or args.scan_chars != SCAN_CHARS or args.why_lost or args.identifiers):
        parser.error("--labelled scores recorded judgments as they are: --in-sample, --scan-chars, --why-lost and "
                     "--identifiers need trajectories and weights, so they do not go with it")
    started = time.monotonic()
    cells = []  # (title, test rows, their source, P(result needed), P(call needed))
    if args.labelled:
        cells = labelled_cells(parser, args)
    elif sources:
        cells = held_out_cells(sources, args.model)
    else:
        rows = {name: build_rows(path, workers=2, scan_chars=args.scan_chars) for name, path in SETS.items()}
        (a, ra), (b, rb) = rows.items()
        for name, r in rows.items():
            cells.append((f"within {name} (5-fold CV)", r, SETS[name], *out_of_fold(r)))
        cells.append((f"train {a} → test {b}", rb, SETS[b], *probabilities(calibrated_heads(ra), rb.X)))
        cells.append((f"train {b} → test {a}", ra, SETS[a], *probabilities(calibrated_heads(rb), ra.X)))
        if args.in_sample:
            cells.extend((f"in-sample {name} (diagnostic)", r, SETS[name], *probabilities(calibrated_heads(r), r.X))
                         for name, r in rows.items())
    print(f"rows built and scored in {time.monotonic() - started:.0f}s", file=sys.stderr)
    extra = {str(source): {IDENTIFIERS: identifier_needed(r, source)} if args.identifiers else {}
             for _, r, source, _, _ in cells}
    lines = [f"budget {args.budget:.0%} of candidate result characters at points with ≥ {args.min_chars:,} "
             f"of them; L = share of later-needed results let go (95 % CI over sessions/instances)", "",
             "| cell | proxy | points (groups) | judge | recency | biggest-first | random | oracle | drop-all | "
             "gap closed |", "|---|---|---|---|---|---|---|---|---|---|"]
    whole = ["", "The other policies dropping whole results instead (no head kept):", "",
             "| cell | proxy | judge | recency | biggest-first | oracle | gap closed |",
             "|---|---|---|---|---|---|---|"]

    def f(cell: dict, name: str) -> str:
        v, lo, hi = cell[name]
        return "—" if np.isnan(v) else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"

    for title, r, source, p_result, p_call in cells:
        if not points(r, args.min_chars):
            note = f"| {title} | — | 0 | no decision point with ≥ {args.min_chars:,} characters of candidate results |"
            lines.append(note)
            whole.append(note)
            print(note, file=sys.stderr)
            continue
        for proxy, cell in evaluate(r, p_result, p_call, args.budget, args.min_chars, args.boot,
                                    extra=extra[str(source)]).items():
            n_points, n_groups, _ = cell["points"]
            lines.append(f"| {title} | {proxy} | {int(n_points)} ({int(n_groups)}) | " + " | ".join(
                f(cell, p) for p in POLICIES[:5]) + f" | {cell['drop-all'][0]:.3f} | {f(cell, 'gap closed')} |")
            print(lines[-1], file=sys.stderr)
        for proxy, cell in evaluate(r, p_result, p_call, args.budget, args.min_chars, args.boot,
                                    same_form=False, extra=extra[str(source)]).items():
            whole.append(f"| {title} | {proxy} | " + " | ".join(
                f(cell, p) for p in ("judge", "recency", "biggest-first", "oracle", "gap closed")) + " |")
    lost = []
    if args.why_lost:
        lost = ["", f"Why the needed results let go were needed (labels-v1): the first use after the point; "
                f"'in ends': the word sits within {args.scan_chars} characters of the result's ends", "",
                "| cell | policy | needed let go | re-run | plain word | other word | word in ends |",
                "|---|---|---|---|---|---|---|"]
        for title, r, source, p_result, p_call in cells:
            for policy, tally in why_lost(r, p_result, p_call, source, args.budget, args.min_chars,
                                          args.scan_chars).items():
                n, words = tally["needed let go"], tally["plain"] + tally["other"]
                lost.append(f"| {title} | {policy} | {n} | {tally['rerun'] / n:.2f} | {tally['plain'] / n:.2f} | "
                            f"{tally['other'] / n:.2f} | {tally['in ends'] / max(words, 1):.2f} |")
    text = "\n".join(lines + whole + lost)
    print(text)
    if args.out_md:
        Path(args.out_md).write_text(text + "\n")
    print(f"total {time.monotonic() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
