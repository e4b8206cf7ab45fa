"""The yardstick: does the judge let go of fewer later-needed results than recency at a matched budget, on
sessions and agent models it never saw?

Decision points every 8 pairs (newest 3 protected) on both dev sets; only points a host would trigger on
(candidate results of at least `--min-chars` characters) count. At each point the product lets go of
results by its own ranking — budget mode (`jev.deciding.policy.budget`, `target_reduction=--budget`, size-aware,
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

    python benchmarks/quality.py [--budget 0.5] [--min-chars 30000] [--boot 10000] [--out-md FILE] [--in-sample]
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

import numpy as np
from sklearn.model_selection import GroupKFold

from calibration.dataset import TrainingRows, build_rows, group_of, trajectories
from calibration.join import read_records
from calibration.labels import STRICT_LABEL_VERSION, pair_uses
from calibration.rarity import Rarity
from calibration.train_local import READ_DEPTH, checked_scan_chars, corpus_name, scores_of, train
from calibration.yardstick import BOOT, POLICIES, Tally, exponent_at, let_go, points, pooled, tally, with_intervals
from jev.errors import ConfigError
from jev.judges.local import MODEL, load_model
from jev.reading.analysis import analyze

DATA = ROOT.parent / "shared" / "data"
SETS = {"SWE (Gemini)": DATA / "mini-swe-agent-swebench-dev.tar.xz",
        "DeepSeek": DATA / "mini-swe-agent-deepseek-dev.tar.xz"}
PROXIES = (STRICT_LABEL_VERSION, "labels-v1", "labels-v2-reuse")


@dataclass(frozen=True)
class Cell:
    """One cell of the table: the rows scored, their source, the judge's probabilities for them and the
    size exponent its budget mode ranks with."""

    title: str
    rows: TrainingRows
    source: Path
    p_result: np.ndarray
    p_call: np.ndarray
    size_exponent: float | np.ndarray = 1.0  # or one per row (each fold of a nested cross-validation its own)


def trained(train_rows: TrainingRows) -> dict:
    """A model document trained on `train_rows` as `python -m calibration.train_local` trains the shipped
    one (its grouped cross-validated choice included), with the shipped common words."""
    return train(train_rows, rarity=load_model().get("rarity"))


def scored(title: str, model: dict, rows: TrainingRows, source: Path) -> Cell:
    """A cell of `rows` scored by a model document, ranked with its size exponent."""
    return Cell(title, rows, source, *scores_of(model, rows.X), float(model.get("size_exponent", 1.0)))


def held_out_cells(sources: list[str], model_path: str | None, workers: int = 2) -> list[Cell]:
    """A cell per source of trajectories the weights never saw: the shipped weights, or the file at
    `model_path`, scored reading the depth and common words they were trained with."""
    model = load_model(model_path)
    judge = MODEL if model_path is None else Path(model_path).name
    return [scored(f"{judge} → {corpus_name(source)} (held out)", model,
                   build_rows(source, workers=workers, scan_chars=model["scan_chars"],
                              rarity=Rarity.of(model.get("rarity")) if model.get("rarity") else None), Path(source))
            for source in sources]


def labelled_cell(source: str) -> Cell:
    """A cell from a file of labelled rows (`jev label` over `jev replay` records): the recorded scores of
    whichever judge made them, ranked with the default size exponent. A refused pair (no score) reads as
    1.0, so no policy of the judge's lets it go, as the compactor keeps it."""
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

    def flags(name: str) -> np.ndarray | None:  # a label `jev label` wrote on every row, or None
        values = [r.get(name) for r in records]
        return None if any(v is None for v in values) else np.asarray(values, dtype=bool)

    rows = TrainingRows(np.zeros((len(records), 0)), np.asarray([bool(r["needed_result"]) for r in records]),
                np.asarray([bool(r["needed_call"]) for r in records]),
                np.asarray([str(r["session_id"]) for r in records]), np.asarray([str(r["key"]) for r in records]),
                np.asarray([int(r["decision_point"]) for r in records]),
                np.asarray([int(r["result_chars"]) for r in records]), flags("needed_result_reuse"), None,
                np.asarray([str(r["call_id"]) for r in records]), flags("needed_result_strict"))
    p_result = np.asarray([score(r, "keep_result") for r in records])
    p_call = np.asarray([score(r, "keep_call") for r in records])
    return Cell(f"{judges[0] or 'judge'} → {corpus_name(source)} (labelled)", rows, Path(source), p_result, p_call)


def out_of_fold(title: str, rows: TrainingRows, source: Path) -> Cell:
    """A cell scoring every row with a judge trained (selection included) without its group: 5 group
    folds, each training its own grouped cross-validated choice — nested, so no fold picks anything on
    the rows it is scored on. Each fold's points are ranked with that fold's size exponent."""
    groups = np.asarray([group_of(s) for s in rows.sessions])
    p_result, p_call, exponent = np.zeros(len(rows.X)), np.zeros(len(rows.X)), np.zeros(len(rows.X))
    for tr, te in GroupKFold(5).split(rows.X, rows.needed_result, groups):
        model = trained(rows.take(tr))
        p_result[te], p_call[te] = scores_of(model, rows.X[te])
        exponent[te] = model["size_exponent"]
    return Cell(title, rows, source, p_result, p_call, exponent)


def evaluate(rows: TrainingRows, p_result: np.ndarray, p_call: np.ndarray, share: float, min_chars: int,
             same_form: bool = True, seed: int = 0, extra: dict[str, np.ndarray] | None = None,
             size_exponent: float | np.ndarray = 1.0) -> dict[str, Tally]:
    """Per proxy (the strict one, v1 and v2, then any `extra` labels of the same rows): what every policy
    let go, per group."""
    return tally(rows, p_result, p_call, {**proxies(rows), **(extra or {})}, share, min_chars, same_form,
                 size_exponent, seed)


def summarized(t: Tally, n_points: int, boot: int, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """L per policy and the gap closed, each (point estimate, 2.5 %, 97.5 %), and the points, groups and
    needed results."""
    out = with_intervals(t, boot, seed)
    out["points"] = (float(n_points), float(len(t.groups)), float(t.total.sum()))
    return out


def proxies(rows: TrainingRows) -> dict[str, np.ndarray]:
    """The proxies a cell's rows carry, the strict one first (the headline)."""
    out = {STRICT_LABEL_VERSION: rows.needed_strict} if rows.needed_strict is not None else {}
    out["labels-v1"] = rows.needed_result
    if rows.needed_result_alt is not None:
        out["labels-v2-reuse"] = rows.needed_result_alt
    return out


_PLAIN = re.compile(r"[A-Za-z]+")
_IDENTIFIER = re.compile(r"[_/0-9]|\.\w|[a-z][A-Z]")
IDENTIFIERS = "labels-v1, identifiers only (diagnostic)"


def identifier_needed(rows: TrainingRows, source: Path) -> np.ndarray:
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


def why_lost(rows: TrainingRows, p_result: np.ndarray, p_call: np.ndarray, source: Path, share: float, min_chars: int,
             scan_chars: int, size_exponent: float | np.ndarray = 1.0) -> dict[str, Counter]:
    """Per policy (judge, recency): of the labels-v1-needed results it lets go, what first made each needed
    after its point — `rerun`, `plain` (a word of letters alone) or `other` word — and, of the words, how
    many sit within `scan_chars` of the result's ends (`in ends`)."""
    wanted: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    rng = np.random.default_rng(0)
    for point in points(rows, min_chars):
        gone = let_go(rows, point, p_result, p_call, share, rng, rows.needed_result, True,
                      exponent_at(size_exponent, point))
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


def scan_chars_argument(parser: argparse.ArgumentParser) -> None:
    """`--scan-chars N`: this script's and `equal_risk.py`'s (the dev-set cells train the recipe on rows that
    read N characters of each result end)."""
    parser.add_argument("--scan-chars", type=int, default=READ_DEPTH, metavar="N",
                        help=f"characters of each result end the judge's features read (default {READ_DEPTH}, "
                             "the shipped judge's): the dev-set cells retrain the recipe reading that depth")


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


def labelled_cells(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Cell]:
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
    parser.add_argument("--boot", type=int, default=BOOT,
                        help="bootstrap resamples of sessions/instances (default %(default)s: at 1000, the pooled strict "
                             "gap's lower bound moved by 0.009 (SD) from one resampling seed to another; at 10000, by "
                             "0.002)")
    parser.add_argument("--out-md", help="also write the table as Markdown here")
    parser.add_argument("--within", action="store_true",
                        help="also score each dev set by 5-fold grouped cross-validation (each fold trains the recipe "
                             "with its own nested choice: five trainings per set)")
    parser.add_argument("--in-sample", action="store_true",
                        help="also score a judge fitted on the very sessions it is scored on (a diagnostic: an upper "
                             "bound on what this recipe and these features rank, never a claim)")
    parser.add_argument("--why-lost", action="store_true",
                        help="also say, for the needed results the judge and recency let go (labels-v1), what "
                             "first made each needed and whether it sits in the ends the judge reads")
    parser.add_argument("--identifiers", action="store_true",
                        help="also score every cell on labels-v1 counting identifier-shaped uses only (a diagnostic "
                             "of the proxy's prose-word noise)")
    scan_chars_argument(parser)
    held_out_arguments(parser)
    args = parser.parse_args()
    checked_scan_chars(parser, args.scan_chars)
    sources = checked_held_out(parser, args)
    if sources and (args.in_sample or args.scan_chars != READ_DEPTH):
        parser.error("--held-out scores weights as they are: --in-sample and --scan-chars retrain, so they do not "
                     "go with it (train weights with `python -m calibration.train_local --scan-chars N`, then "
                     "pass them as --model)")
    if args.labelled and (args.in_sample or args.scan_chars != READ_DEPTH or args.why_lost or args.identifiers):
        parser.error("--labelled scores recorded judgments as they are: --in-sample, --scan-chars, --why-lost and "
                     "--identifiers need trajectories and weights, so they do not go with it")
    started = time.monotonic()
    cells: list[Cell] = []
    if args.labelled:
        cells = labelled_cells(parser, args)
    elif sources:
        cells = held_out_cells(sources, args.model)
    else:
        rows = {name: build_rows(path, workers=2, scan_chars=args.scan_chars) for name, path in SETS.items()}
        (a, ra), (b, rb) = rows.items()
        if args.within:
            cells.extend(out_of_fold(f"within {name} (5-fold CV, nested)", r, SETS[name]) for name, r in rows.items())
        cells.append(scored(f"train {a} → test {b}", trained(ra), rb, SETS[b]))
        cells.append(scored(f"train {b} → test {a}", trained(rb), ra, SETS[a]))
        if args.in_sample:
            cells.extend(scored(f"in-sample {name} (diagnostic)", trained(r), r, SETS[name]) for name, r in rows.items())
    print(f"rows built and scored in {time.monotonic() - started:.0f}s", file=sys.stderr)
    extra = {str(c.source): {IDENTIFIERS: identifier_needed(c.rows, c.source)} if args.identifiers else {}
             for c in cells}
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

    def row(title: str, proxy: str, cell: dict, same_form: bool) -> str:
        if not same_form:
            return f"| {title} | {proxy} | " + " | ".join(
                f(cell, p) for p in ("judge", "recency", "biggest-first", "oracle", "gap closed")) + " |"
        n_points, n_groups, _ = cell["points"]
        return (f"| {title} | {proxy} | {int(n_points)} ({int(n_groups)}) | " + " | ".join(
            f(cell, p) for p in POLICIES[:5]) + f" | {cell['drop-all'][0]:.3f} | {f(cell, 'gap closed')} |")

    by_form: dict[bool, dict[str, dict[str, Tally]]] = {True: defaultdict(dict), False: defaultdict(dict)}
    n_points = 0
    for c in cells:
        if not points(c.rows, args.min_chars):
            note = f"| {c.title} | — | 0 | no decision point with ≥ {args.min_chars:,} characters of candidate results |"
            lines.append(note)
            whole.append(note)
            print(note, file=sys.stderr)
            continue
        n = len(points(c.rows, args.min_chars))
        n_points += n
        for same_form, table in ((True, lines), (False, whole)):
            for proxy, t in evaluate(c.rows, c.p_result, c.p_call, args.budget, args.min_chars, same_form=same_form,
                                     extra=extra[str(c.source)], size_exponent=c.size_exponent).items():
                by_form[same_form][proxy][c.title] = t
                table.append(row(c.title, proxy, summarized(t, n, args.boot), same_form))
                if same_form:
                    print(lines[-1], file=sys.stderr)
    if len(cells) > 1:  # the pooled headline: every cell's groups resampled together
        for same_form, table in ((True, lines), (False, whole)):
            for proxy, by_cell in by_form[same_form].items():
                if len(by_cell) == len(cells):
                    table.append(row("pooled", proxy, summarized(pooled(by_cell), n_points, args.boot), same_form))
    lost = []
    if args.why_lost:
        lost = ["", f"Why the needed results let go were needed (labels-v1): the first use after the point; "
                f"'in ends': the word sits within {args.scan_chars} characters of the result's ends", "",
                "| cell | policy | needed let go | re-run | plain word | other word | word in ends |",
                "|---|---|---|---|---|---|---|"]
        for c in cells:
            for policy, tally in why_lost(c.rows, c.p_result, c.p_call, c.source, args.budget, args.min_chars,
                                          args.scan_chars, c.size_exponent).items():
                n, words = tally["needed let go"], tally["plain"] + tally["other"]
                lost.append(f"| {c.title} | {policy} | {n} | {tally['rerun'] / n:.2f} | {tally['plain'] / n:.2f} | "
                            f"{tally['other'] / n:.2f} | {tally['in ends'] / max(words, 1):.2f} |")
    text = "\n".join(lines + whole + lost)
    print(text)
    if args.out_md:
        Path(args.out_md).write_text(text + "\n")
    print(f"total {time.monotonic() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
