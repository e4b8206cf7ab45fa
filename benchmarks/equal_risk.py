"""Savings at equal realised risk: thresholds chosen on a calibration split (as `jev calibrate` chooses
them) against keep-last-N, on sessions the thresholds never saw.

The judge's scores come as in the yardstick (`quality.py`): out-of-fold within each dev set, or trained
on one agent model and applied to the other. Per resplit (instances halved at random, `--splits` times):
`calibration.select_thresholds(alpha, delta, size_aware=True)` picks the thresholds on one half, and on
the other half the compactor's rule is applied at every decision point (its own decision table at the
certified discard and keep thresholds, `calibration.thresholds.applied`). Realised risk = the share of
later-needed results let go, pooled over the half's points and, as the guarantee counts it, per session
(each certifying unit's share, averaged over units); savings = the share of candidate result characters let
go. Keep-last-N is read at the judge's pooled risk and, separately, at its per-session risk. Keep-last-N
lets go of every candidate but the newest N at each point; its savings at the judge's realised risk are
read off its (risk, savings) curve over N (linear between neighbouring N). Ratio = judge / keep-last-N.
The best threshold in hindsight is the most the certified rule's family (calibration's grid of discard
thresholds, every candidate window and keep threshold, the chosen size exponent) lets go of on the measuring
half with its per-session risk <= alpha, chosen knowing that half's labels; judge / hindsight counts a
resplit that certified nothing as 0. The last two columns count the resplits letting go of at least 10 % of
the result characters, and those where the judge saves at least what keep-last-N saves at its per-session
risk (one that certified nothing counts as neither).
Each proxy calibrates and is measured on its own labels. An instance is one certifying unit (its runs
are not independent); where a set has several runs per instance the table also shows runs as units,
which is optimistic.

    python benchmarks/equal_risk.py [--alpha 0.1[,0.05]] [--delta 0.1] [--splits 10] [--size-exponents 0.5,1,2]
                                    [--recent-pairs 0,4,8,16 [--recent-pairs 0 ...]]
                                    [--keep-thresholds 0.4,0.5,0.65,0.8 [--keep-thresholds 0.8 ...]] [--across-only]
                                    [--bound wsr|wsr-avg|hb] [--scan-chars N]
    python benchmarks/equal_risk.py --held-out PATH [--held-out PATH ...] [--model FILE]
    python benchmarks/equal_risk.py --labelled FILE [--labelled FILE ...]

`--held-out PATH` does the same on sessions the weights never saw (the shipped ones, or `--model FILE`),
calibrating on half of that source's instances and measuring on the other half, as a deployment would
calibrate on its own shadow logs; nothing is trained and the dev sets are not read. `--labelled FILE`
does it for any judge from its labelled SHADOW records (`jev replay`, then `jev label`), as `quality.py
--labelled` does. `--scan-chars N` trains the dev-set cells' judges on rows that read N characters of each
result end (the shipped depth by default), as `quality.py --scan-chars` does: what another reading depth
would certify.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from quality import (
    SETS,
    checked_held_out,
    held_out_arguments,
    held_out_cells,
    labelled_cells,
    out_of_fold,
    proxies,
    scan_chars_argument,
    scored,
    trained,
)

from calibration import select_thresholds
from calibration.dataset import TrainingRows, build_rows, group_of
from calibration.risk import BOUNDS, DEFAULT_BOUND, session_losses
from calibration.thresholds import (
    GRID,
    Rows,
    applied,
    decided,
    parse_keep_thresholds,
    parse_recent_pairs,
    parse_size_exponents,
    recency_rank,
    result_score,
)
from calibration.train_local import READ_DEPTH, checked_scan_chars


def labelled(rows: TrainingRows, p_result: np.ndarray, p_call: np.ndarray, needed: np.ndarray, by_run: bool) -> Rows:
    """The rows as `jev label` would write them: one certifying unit per instance (the runs of one instance
    are not independent), or per run when `by_run` (optimistic where an instance has several runs)."""
    units = rows.sessions if by_run else np.asarray([group_of(s) for s in rows.sessions])
    return Rows(units, np.full(len(needed), "bash"), p_call, p_result, rows.result_chars, needed,
                rows.needed_call | needed, rows.points, rows.keys, ranks=recency_rank(rows.sessions, rows.points,
                                                                                        rows.keys))


def keep_last_curve(rows: TrainingRows, needed: np.ndarray, index: np.ndarray, units: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pooled risk, per-session risk, savings) of keep-last-N for N = 0, 1, ... over the rows at `index`:
    the share of needed results let go over all of them, the same share per certifying unit (`units`, 0
    where a unit needed none) averaged over units, as the guarantee counts, and the share of characters."""
    rank = recency_rank(rows.sessions, rows.points, rows.keys)  # 0 = the newest candidate of its point
    assert rank is not None
    r, chars, need = rank[index], rows.result_chars[index].astype(float), needed[index]
    top = int(r.max()) + 2 if len(r) else 1
    lost = r[None, :] >= np.arange(top)[:, None]
    risk = (lost & need[None, :]).sum(axis=1) / max(need.sum(), 1)
    per_session = session_losses(lost, need, units[index]).mean(axis=1)
    saved = (lost * chars[None, :]).sum(axis=1) / max(chars.sum(), 1.0)
    return risk, per_session, saved


def at_risk(risk: np.ndarray, saved: np.ndarray, target: float) -> float:
    """Keep-last-N's savings at realised risk `target`, linear between neighbouring N (risk falls as N grows)."""
    order = np.argsort(risk, kind="stable")
    return float(np.interp(target, risk[order], saved[order]))


def hindsight(held: Rows, exponent: float, keeps: tuple[float, ...], windows: tuple[int, ...], alpha: float
              ) -> float:
    """The most the certified rule's family (every discard threshold of calibration's grid, every candidate
    window and keep threshold, the size exponent chosen) lets go of on the measuring half with its realised
    per-session risk <= alpha: the best threshold in hindsight, which no calibration can beat."""
    score = result_score(held, True, exponent)
    chars = held.result_chars.astype(float)
    best = 0.0
    for keep in keeps:
        grid = GRID[(GRID >= 0) & (keep > GRID)]
        for window in windows:
            dropped, truncated = decided(grid, keep, held, score, window)
            let_go = dropped | truncated
            safe = session_losses(let_go, held.needed_result, held.unit_ids).mean(axis=1) <= alpha
            if safe.any():
                best = max(best, float((let_go[safe] * chars).sum(axis=1).max() / max(chars.sum(), 1.0)))
    return best


def cell(rows: TrainingRows, p_result: np.ndarray, p_call: np.ndarray, needed: np.ndarray, alpha: float, delta: float,
         splits: int, by_run: bool = False, exponents: tuple[float, ...] = (1.0,), windows: tuple[int, ...] = (0,),
         keeps: tuple[float, ...] = (0.8,), bound: str = DEFAULT_BOUND) -> list[tuple[float, ...]]:
    """Per resplit: (judge risk, judge savings, keep-last-N savings at that risk, ratio, size exponent
    chosen, per-session risk, keep-last-N savings at it, ratio, window chosen, savings of the best threshold
    in hindsight, keep threshold chosen); all but the best in hindsight NaN where nothing was certified
    (savings then 0). Halves are always drawn by instance."""
    data = labelled(rows, p_result, p_call, needed, by_run)
    instance = np.asarray([group_of(s) for s in rows.sessions])
    groups = np.unique(instance)
    out = []
    for seed in range(splits):
        calibrate = np.isin(instance, np.random.default_rng(seed).permutation(groups)[: len(groups) // 2])
        calibration = select_thresholds(data.take(calibrate), alpha, delta, size_aware=True, seed=seed,
                                        size_exponents=exponents, recent_pairs=windows, keep_threshold=keeps,
                                        bound=bound)
        chosen = calibration.overall
        held = data.take(~calibrate)
        best = hindsight(held, calibration.size_exponent, keeps, windows, alpha)
        if not chosen.certified:
            out.append((float("nan"),) * 9 + (best, float("nan")))
            continue
        test = np.flatnonzero(~calibrate)
        # the compactor's own decision table at the certified thresholds: what is certified is what is let go
        let_go, _unsure = applied(chosen.discard_threshold, chosen.keep_threshold, held,
                                  result_score(held, True, calibration.size_exponent), calibration.recent_pairs)
        chars = held.result_chars.astype(float)
        risk = float(held.needed_result[let_go].sum() / max(held.needed_result.sum(), 1))
        per_session = float(session_losses(let_go[None], held.needed_result, held.unit_ids).mean())
        saved = float(chars[let_go].sum() / max(chars.sum(), 1.0))
        pooled, by_session, kept_saved = keep_last_curve(rows, needed, test, data.unit_ids)
        baseline = at_risk(pooled, kept_saved, risk)
        session_baseline = at_risk(by_session, kept_saved, per_session)
        out.append((risk, saved, baseline, saved / baseline if baseline > 0 else float("inf"),
                    calibration.size_exponent, per_session, session_baseline,
                    saved / session_baseline if session_baseline > 0 else float("inf"), calibration.recent_pairs,
                    best, chosen.keep_threshold))
    return out


def table_at(cells: list, alpha: float, delta: float, splits: int, exponents: tuple[float, ...],
             windows: tuple[int, ...], keeps: tuple[float, ...] = (0.8,), bound: str = DEFAULT_BOUND) -> None:
    """One table: every cell and proxy calibrated at `alpha` over `splits` resplits."""
    print(f"## alpha {alpha}, recency windows {', '.join(map(str, windows))}, keep thresholds "
          f"{', '.join(f'{k:g}' for k in keeps)}\n")
    print(f"alpha {alpha}, delta {delta}, bound {bound}, {splits} resplits (calibrate on half the instances, measure "
          "on the other half); medians over certified resplits [min, max]\n")
    chose, windowed, kept = len(exponents) > 1, len(windows) > 1, len(keeps) > 1
    print(f"Size exponents chosen among {', '.join(f'{e:g}' for e in exponents)}; recency windows (newest candidate "
          f"pairs never judged) among {', '.join(map(str, windows))}; keep thresholds among "
          f"{', '.join(f'{k:g}' for k in keeps)} (each combination certified at delta over their number).\n")
    print("| cell | proxy | certified | judge risk, pooled | judge saves | keep-last-N saves at that risk | ratio | "
          "judge risk, per session | keep-last-N saves at that per-session risk | ratio, per session | "
          "best in hindsight saves | judge / hindsight | resplits letting go >= 10 % | resplits >= keep-last-N, "
          "per session |" + (" exponents chosen |" if chose else "") + (" windows chosen |" if windowed else "")
          + (" keep thresholds chosen |" if kept else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if chose else "")
          + ("---|" if windowed else "") + ("---|" if kept else ""))
    runs = [(title + " (runs as sessions)", r, pr, pc, True) for title, r, pr, pc in cells
            if len(set(r.sessions.tolist())) > len({group_of(s) for s in r.sessions})]
    for title, r, p_result, p_call, by_run in [(*c, False) for c in cells] + runs:
        for proxy, needed in proxies(r).items():  # a file labelled before a proxy rode along has fewer
            results = np.asarray(cell(r, p_result, p_call, needed, alpha, delta, splits, by_run,
                                      exponents, windows, keeps, bound))
            ok = results[~np.isnan(results[:, 0])]

            def f(k: int) -> str:
                return (f"{np.median(ok[:, k]):.3f} [{ok[:, k].min():.3f}, {ok[:, k].max():.3f}]" if len(ok)
                        else "—")
            def ratio(k: int) -> str:
                return f"{np.median(ok[:, k]):.2f}× [{ok[:, k].min():.2f}, {ok[:, k].max():.2f}]" if len(ok) else "—"
            saved = np.nan_to_num(results[:, 1])  # a resplit certifying nothing lets go of nothing
            best = results[:, 9]
            share = np.where(best > 0, saved / np.maximum(best, 1e-12), np.nan)
            beats = int(np.sum(~np.isnan(results[:, 7]) & (results[:, 7] >= 1)))
            print(f"| {title} | {proxy} | {len(ok)}/{splits} | {f(0)} | {f(1)} | {f(2)} | {ratio(3)} | "
                  f"{f(5)} | {f(6)} | {ratio(7)} | {np.median(best):.3f} [{best.min():.3f}, {best.max():.3f}] | "
                  + (f"{np.nanmedian(share):.2f}× [{np.nanmin(share):.2f}, {np.nanmax(share):.2f}]"
                     if np.isfinite(share).any() else "—")
                  + f" | {int(np.sum(saved >= 0.1))}/{splits} | {beats}/{splits} |"
                  + (f" {', '.join(f'{e:g}' for e in ok[:, 4])} |" if chose else "")
                  + (f" {', '.join(f'{w:g}' for w in ok[:, 8])} |" if windowed else "")
                  + (f" {', '.join(f'{k:g}' for k in ok[:, 10])} |" if kept else ""), flush=True)


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace
            ) -> tuple[tuple[float, ...], list[tuple[int, ...]], list[tuple[float, ...]]]:
    """`--size-exponents`, each `--recent-pairs` and each `--keep-thresholds` as numbers, or the parser exits
    naming the flag and the rule (the selector's)."""
    try:
        return (parse_size_exponents(args.size_exponents),
                [parse_recent_pairs(text) for text in args.recent_pairs or ["0"]],
                [parse_keep_thresholds(text, "--keep-thresholds") for text in args.keep_thresholds or ["0.8"]])
    except ValueError as exc:
        parser.error(str(exc))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alpha", default="0.1", help="the alphas to calibrate at, comma-separated (a table each, "
                                                       "from the same scores)")
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--splits", type=int, default=10, help="random halvings of the instances")
    parser.add_argument("--size-exponents", default="1",
                        help="size exponents calibration chooses among (comma-separated, e.g. 0.5,1,2; each "
                             "certified at delta over their number), as `jev calibrate --size-exponents`")
    parser.add_argument("--recent-pairs", action="append",
                        help="recency windows calibration chooses among (comma-separated, e.g. 0,4,8,16), as `jev "
                             "calibrate --recent-pairs`; repeat for a table each (default: 0)")
    parser.add_argument("--keep-thresholds", action="append",
                        help="keep thresholds calibration chooses among (comma-separated, e.g. 0.4,0.5,0.65,0.8), as "
                             "`jev calibrate --keep-threshold`; repeat for a table each (default: 0.8)")
    parser.add_argument("--bound", default=DEFAULT_BOUND, choices=BOUNDS,
                        help="the test certifying, as `jev calibrate --bound` (default: %(default)s, its default)")
    parser.add_argument("--across-only", action="store_true",
                        help="only the cells across agent models (the within cells train the recipe five times a set)")
    scan_chars_argument(parser)
    held_out_arguments(parser)
    args = parser.parse_args()
    exponents, window_sets, keep_sets = checked(parser, args)
    checked_scan_chars(parser, args.scan_chars)
    if args.scan_chars != READ_DEPTH and (args.held_out or args.labelled):
        parser.error("--scan-chars retrains the dev-set cells: not with --held-out or --labelled, which score a "
                     "judge as it is (train weights with `python -m calibration.train_local --scan-chars N`, then "
                     "pass them as --model)")
    try:
        alphas = [float(a) for a in args.alpha.split(",")]
    except ValueError:
        parser.error(f"--alpha {args.alpha!r}: must be comma-separated numbers in (0, 1)")
    if not all(0 < a < 1 for a in alphas):
        parser.error(f"--alpha {args.alpha!r}: must be comma-separated numbers in (0, 1)")
    sources = checked_held_out(parser, args)
    started = time.monotonic()
    if args.labelled:
        found = labelled_cells(parser, args)
    elif sources:
        found = held_out_cells(sources, args.model)
    else:
        rows = {name: build_rows(path, workers=2, scan_chars=args.scan_chars) for name, path in SETS.items()}
        (a, ra), (b, rb) = rows.items()
        found = [] if args.across_only else [out_of_fold(f"within {name} (5-fold CV, nested)", r, SETS[name])
                                             for name, r in rows.items()]
        found.append(scored(f"train {a} → test {b}", trained(ra), rb, SETS[b]))
        found.append(scored(f"train {b} → test {a}", trained(rb), ra, SETS[a]))
    cells = [(c.title, c.rows, c.p_result, c.p_call) for c in found]
    for alpha in alphas:  # the scores are made once; each alpha, set of windows and of keeps is its own table
        for keeps in keep_sets:
            for windows in window_sets:
                table_at(cells, alpha, args.delta, args.splits, exponents, windows, keeps, args.bound)
    print(f"\ntotal {time.monotonic() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
