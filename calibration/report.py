"""The calibration report: the guarantee in words, thresholds, reliability diagrams, the risk–coverage
curve with the bound, a per-tool table — Markdown plus PNG figures (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .risk import sessions_needed
from .thresholds import Calibration, Selection, result_score


def guarantee(selection: Selection, label: str = "labels-v1") -> str:
    """The guarantee, in one sentence (or why there is none)."""
    if not selection.certified:
        return selection.message
    return (f"With probability >= {1 - selection.delta:.0%} over the {selection.n_sessions} certifying sessions, "
            f"the expected share of later-needed pairs that lose something needed (result dropped or truncated, "
            f"or a needed call dropped) in a new session like these is <= {selection.alpha:.1%}, when results "
            f"scored <= {selection.discard_threshold:.4g} are let go. Labels: the hindsight proxy {label}; the "
            "guarantee covers this judge version and sessions from the same distribution only.")


def _reliability(ax: Any, scores: np.ndarray, labels: np.ndarray, calibrator: Any, title: str) -> None:
    bins = np.linspace(0, 1, 11)
    for values, name in ((scores, "raw"), (calibrator.predict(scores), "calibrated")):
        idx = np.clip(np.digitize(values, bins) - 1, 0, 9)
        xs = [values[idx == b].mean() for b in range(10) if (idx == b).any()]
        ys = [labels[idx == b].mean() for b in range(10) if (idx == b).any()]
        ax.plot(xs, ys, marker="o", label=name)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":")
    ax.set(title=title, xlabel="predicted P(needed)", ylabel="observed share needed", xlim=(0, 1), ylim=(0, 1))
    ax.legend()


def figures(result: Calibration, out: Path) -> list[str]:
    """Write the PNG figures; returns their file names (none when matplotlib is not installed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    rows = result.test_rows if len(result.test_rows.sessions) else result.fit_rows
    names = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    _reliability(axes[0], result_score(rows, result.size_aware), rows.needed_result, result.result_calibrator,
                 "keep_result, size-scaled score (certifying split)" if result.size_aware
                 else "keep_result (certifying split)")
    _reliability(axes[1], rows.keep_call, rows.needed_call, result.call_calibrator, "keep_call (certifying split)")
    fig.tight_layout()
    fig.savefig(out / "reliability.png", dpi=110)
    plt.close(fig)
    names.append("reliability.png")

    s = result.overall
    curve = [c for c in s.curve if c["raw"] >= 0]
    if curve:
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        n = max(s.n_sessions, 1)
        bound = [_upper_bound(c["risk"], n, s.delta) for c in curve]
        ax.plot([c["chars_discarded"] for c in curve], [c["risk"] for c in curve], label="empirical risk (characters)")
        ax.plot([c["pairs_discarded"] for c in curve], [c["risk"] for c in curve], label="empirical risk (pairs)",
                alpha=0.6)
        ax.plot([c["chars_discarded"] for c in curve], bound, linestyle="--", label=f"{1 - s.delta:.0%} upper bound")
        ax.axhline(s.alpha, color="red", linestyle=":", label=f"alpha = {s.alpha}")
        if s.certified:
            ax.axvline(s.chars_discarded, color="green", linestyle=":", label="selected threshold")
        ax.set(xlabel="share of candidate results discarded", ylabel="needed-pair loss rate per session",
               title="Risk–coverage", xlim=(0, 1), ylim=(0, max(0.2, s.alpha * 3)))
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "risk_coverage.png", dpi=110)
        plt.close(fig)
        names.append("risk_coverage.png")
    return names


def _upper_bound(risk: float, n: int, delta: float) -> float:
    """A Hoeffding upper confidence bound on the mean session loss (for the figure only)."""
    return min(1.0, risk + float(np.sqrt(np.log(1 / delta) / (2 * n))))


def markdown(result: Calibration, images: list[str]) -> str:
    s = result.overall
    lines = ["# Threshold calibration", "", "## Guarantee", "", guarantee(s), "",
             "## Thresholds", "",
             f"- discard_threshold = **{s.discard_threshold:.6g}** (calibrated P(needed) <= {s.calibrated_discard:.4g})"
             if s.certified else "- discard_threshold: **none certified**",
             f"- keep_threshold = **{s.keep_threshold:.4g}**: a cost setting. Among results at or below the discard "
             "threshold it separates calls confidently still needed (TRUNCATE_RESULT: the call stays, the result "
             "is cut) from unclear ones (KEEP everything). The guarantee counts every result at or below the "
             f"discard threshold as lost, so it holds for any keep_threshold; here the UNCERTAIN band holds "
             f"{s.uncertain_rate:.1%} of those results.",
             f"- size-aware scoring: {'on (result score scaled by (1000 / result_chars))' if result.size_aware else 'off'}",
             "", "## Expected effect (certifying split)", "",
             f"- candidate pairs let go: {s.pairs_discarded:.1%}; candidate result characters let go: {s.chars_discarded:.1%}",
             f"- empirical loss rate: {s.risk:.4f} (p-value {s.pvalue:.3g}); sessions: {s.n_sessions}, pairs: {s.n_rows}",
             f"- fewest sessions that could certify alpha={s.alpha}, delta={s.delta}: {sessions_needed(s.alpha, s.delta)}",
             "", "## What this does not promise", "",
             "- Labels are a lexical hindsight proxy: influence on reasoning without copying is not seen.",
             "- Sessions from other agents, models, tool mixes or judge versions are a different distribution: "
             "re-run SHADOW and recalibrate for each.", ""]
    if result.per_tool:
        lines += ["## Per tool", "", "| tool | sessions | pairs | certified | discard | keep | loss | results let go |",
                  "|---|---|---|---|---|---|---|---|"]
        for t in result.per_tool:
            lines.append(f"| {t.group} | {t.n_sessions} | {t.n_rows} | {'yes' if t.certified else 'no'} | "
                         f"{t.discard_threshold:.4g} | {t.keep_threshold:.4g} | {t.risk:.4f} | {t.chars_discarded:.1%} |")
        lines.append("")
    lines += ["## Calibration curve (selected points)", "", "| calibrated d | raw d | loss | p-value | pairs | chars |",
              "|---|---|---|---|---|---|"]
    for c in s.curve[:: max(1, len(s.curve) // 12)]:
        p = "not tested" if c["pvalue"] is None else f"{c['pvalue']:.3g}"
        lines.append(f"| {c['calibrated']:.4g} | {c['raw']:.4g} | {c['risk']:.4f} | {p} | {c['pairs_discarded']:.1%} "
                     f"| {c['chars_discarded']:.1%} |")
    lines.append("")
    lines += [f"![{name}]({name})" for name in images]
    return "\n".join(lines) + "\n"


def report(result: Calibration, out_dir: str | Path) -> dict[str, Any]:
    """Write `thresholds.json` (only when certified), `calibration.json`, `report.md` and the figures."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    images = figures(result, out)
    (out / "report.md").write_text(markdown(result, images))
    summary = {"certified": result.overall.certified, "guarantee": guarantee(result.overall),
               "config": result.config() if result.overall.certified else None,
               "overall": _selection_json(result.overall), "per_tool": [_selection_json(t) for t in result.per_tool],
               "figures": images}
    (out / "calibration.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    if result.overall.certified:
        (out / "thresholds.json").write_bytes(orjson.dumps(result.config(), option=orjson.OPT_INDENT_2))
    elif (out / "thresholds.json").exists():
        (out / "thresholds.json").unlink()  # never leave an older, uncertified threshold behind
    return summary


def _selection_json(s: Selection) -> dict[str, Any]:
    return {k: getattr(s, k) for k in ("group", "alpha", "delta", "n_sessions", "n_rows", "certified",
                                       "discard_threshold", "keep_threshold", "calibrated_discard", "risk", "pvalue",
                                       "pairs_discarded", "chars_discarded", "uncertain_rate", "sessions_needed",
                                       "message")}
