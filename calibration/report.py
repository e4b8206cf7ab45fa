"""The calibration report: the guarantee in words, thresholds, reliability diagrams, the risk–coverage
curve with the bound, a per-tool table — Markdown plus PNG figures (matplotlib, Agg)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .labels import CERTIFIED_LABEL, LABEL_MEANINGS
from .risk import BOUND_NAMES, sessions_needed
from .thresholds import Calibration, Selection, TargetSelection, result_score


def guarantee(result: Calibration | Selection, label: str = "") -> str:
    """The guarantee, in one or two sentences (or why there is none), naming both risks."""
    selection = result.overall if isinstance(result, Calibration) else result
    label = label or (result.test_rows.label_version if isinstance(result, Calibration) else CERTIFIED_LABEL)
    meaning = f" (a result counts as needed when {LABEL_MEANINGS[label]})" if label in LABEL_MEANINGS else ""
    tail = (f" Labels: the hindsight proxy {label}{meaning}; the guarantee covers this judge version and sessions from "
            "the same distribution only.")
    delta = result.delta if isinstance(result, Calibration) else selection.delta
    chosen = ""
    n = (len(result.size_exponents) * len(result.keep_thresholds) * len(result.recent_pairs_among)
         if isinstance(result, Calibration) else 1)
    if isinstance(result, Calibration) and n > 1:
        chosen = (f" The size exponent {result.size_exponent:g}, keep threshold {result.keep_threshold:g} and recency "
                  f"window {result.recent_pairs} were chosen among exponents "
                  f"{', '.join(f'{e:g}' for e in result.size_exponents)}, keep thresholds "
                  f"{', '.join(f'{k:g}' for k in result.keep_thresholds)} and windows "
                  f"{', '.join(map(str, result.recent_pairs_among))}, each combination certified at delta/{n} "
                  f"= {selection.delta:.3g}, so this holds for the one chosen.")
    sentences = []
    if selection.certified:
        sentences.append(
            f"With probability >= {1 - delta:.0%} over the {selection.n_sessions} certifying sessions, "
            f"in a new session like these, under a compactor with discard_threshold "
            f"{selection.discard_threshold:.4g} and keep_threshold {selection.keep_threshold:.4g}: "
            f"the expected share of later-needed results let go (dropped or truncated), R_result, is "
            f"<= {selection.alpha:.1%}, and the expected share of later-needed calls dropped, R_call, is "
            f"<= {selection.alpha:.1%}." + chosen)
    else:
        sentences.append(selection.message)
    target = result.target if isinstance(result, Calibration) else None
    if target is not None:
        sentences.append(
            f"Budget mode: with probability >= {1 - delta:.0%} over the same sessions, "
            f"target_reduction = {target.target_reduction:.0%} keeps R_result and R_call each <= {target.alpha:.1%}."
            if target.certified else target.message)
    return " ".join(sentences) + (tail if selection.certified or (target is not None and target.certified) else "")


def _reliability(ax: Any, scores: np.ndarray, labels: np.ndarray, calibrator: Any, title: str) -> None:
    from sklearn.calibration import calibration_curve

    both = len(set(labels.tolist())) >= 2  # a curve needs needed and unneeded rows
    for values, name in ((np.clip(scores, 0, 1), "raw"), (calibrator.predict(scores), "calibrated")):
        if not both:
            break
        observed, predicted = calibration_curve(labels, values, n_bins=10, strategy="uniform")
        ax.plot(predicted, observed, marker="o", label=name)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":")
    ax.set(title=title + ("" if both else " (one class only: no curve)"), xlabel="predicted P(needed)",
           ylabel="observed share needed", xlim=(0, 1), ylim=(0, 1))
    if both:
        ax.legend()


def figures(result: Calibration, out: Path) -> list[str]:
    """Write the PNG figures; returns their file names (none when matplotlib is not installed). Every bound
    drawn is the one the certification used (`risk.upper_bound` of the same test)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    rows = result.test_rows if len(result.test_rows.sessions) else result.fit_rows
    names = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    _reliability(axes[0], result_score(rows, result.size_aware, result.size_exponent), rows.needed_result,
                 result.result_calibrator,
                 "keep_result, size-scaled score" if result.size_aware else "keep_result")
    _reliability(axes[1], rows.keep_call, rows.needed_call, result.call_calibrator, "keep_call")
    fig.tight_layout()
    fig.savefig(out / "reliability.png", dpi=110)
    plt.close(fig)
    names.append("reliability.png")

    s = result.overall
    panels: list[tuple[str, list[dict[str, Any]], Selection | TargetSelection]] = [
        ("threshold", [c for c in s.curve if c["raw"] >= 0], s)]
    if result.target is not None:
        panels.append(("budget mode", result.target.curve, result.target))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (title, curve, chosen) in zip(axes[0], panels, strict=True):
        x = [c["chars_discarded"] for c in curve]
        ax.plot(x, [c["risk_result"] for c in curve], color="C0", label="R_result, empirical")
        ax.plot(x, [c["risk_call"] for c in curve], color="C1", label="R_call, empirical")
        for key, color, name in (("upper_result", "C0", "R_result"), ("upper_call", "C1", "R_call")):
            bounded = [(c["chars_discarded"], c[key]) for c in curve if c.get(key) is not None]
            if bounded:
                ax.plot(*zip(*bounded, strict=True), color=color, linestyle="--", marker=".",
                        label=f"{name}, certified {1 - chosen.delta:.0%} upper bound ({chosen.bound})")
        ax.axhline(chosen.alpha, color="red", linestyle=":", label=f"alpha = {chosen.alpha}")
        if chosen.certified:
            ax.axvline(chosen.chars_discarded, color="green", linestyle=":", label="selected")
        ax.set(xlabel="share of candidate result characters let go",
               ylabel="risk: mean per-session share of later-needed items lost",
               title=f"Risk–coverage, {title}", xlim=(0, 1), ylim=(0, max(0.2, chosen.alpha * 3)))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "risk_coverage.png", dpi=110)
    plt.close(fig)
    names.append("risk_coverage.png")
    return names


def markdown(result: Calibration, images: list[str]) -> str:
    s = result.overall
    lines = ["# Threshold calibration", "", "## Guarantee", "", guarantee(result), "",
             f"Certified for: {orjson.dumps(result.stamp()).decode()}", "", "## Thresholds", "",
             f"- discard_threshold = **{s.discard_threshold:.6g}** (calibrated P(needed) <= {s.calibrated_discard:.4g},"
             " descriptive)" if s.certified else "- discard_threshold: **none certified**",
             f"- keep_threshold = **{s.keep_threshold:.4g}**, the one the compactor runs, certified with the discard "
             "threshold: a raw result score at or above it is always kept, and among results at or below the "
             "discard threshold it separates calls confidently still needed (TRUNCATE_RESULT: the call stays, the "
             "result is cut) from unclear ones (KEEP everything). The guarantee is tested through that decision "
             "table, so it covers exactly what such a compactor lets go; the UNCERTAIN band holds "
             f"{s.uncertain_rate:.1%} of the results at or below the discard threshold.",
             "- size-aware scoring: " + (f"on (result score scaled by (1000 / result_chars) ** {result.size_exponent:g}"
                                         + (f", the exponent chosen among {', '.join(f'{e:g}' for e in result.size_exponents)}"
                                            " for the most characters let go" if len(result.size_exponents) > 1 else "")
                                         + ")" if result.size_aware else "off"),
             f"- bound: {s.bound} ({BOUND_NAMES[s.bound]}); "
             f"sessions spent on fitting: {len(set(result.fit_rows.unit_ids.tolist()))}",
             "", "## Expected effect (certifying sessions)", "",
             f"- candidate pairs let go: {s.pairs_discarded:.1%}; candidate result characters let go: {s.chars_discarded:.1%}",
             f"- empirical R_result {s.risk_result:.4f} (upper bound {s.upper_result:.4f}), R_call {s.risk_call:.4f} "
             f"(upper bound {s.upper_call:.4f}); p-value {s.pvalue:.3g}; sessions: {s.n_sessions}, pairs: {s.n_rows}",
             f"- fewest sessions that could certify alpha={s.alpha}, delta={s.delta}: {sessions_needed(s.alpha, s.delta)}"
             + (f"; sessions like these that would certify the next threshold: about {s.more_sessions}"
                if s.more_sessions else "")]
    if s.recency is not None:
        lines.append(f"- recency on the same sessions: keep-last-{int(s.recency['keep_last'])} reaches R_result "
                     f"{s.recency['risk_result']:.4f} (<= the judge's) letting go of "
                     f"{s.recency['chars_discarded']:.1%} of candidate result characters, against the judge's "
                     f"{s.chars_discarded:.1%}")
    t = result.target
    if t is not None:
        lines += ["", "## Budget mode", "",
                  f"- target_reduction = **{t.target_reduction:.0%}** (keep_threshold {result.keep_threshold:.4g}): "
                  f"R_result {t.risk_result:.4f} (upper bound {t.upper_result:.4f}), R_call {t.risk_call:.4f} "
                  f"(upper bound {t.upper_call:.4f}), {t.chars_discarded:.1%} of candidate result characters removed "
                  f"over {t.n_points} decision points" if t.certified else f"- {t.message}",
                  "", "| target | R_result | R_call | p-value | characters removed |", "|---|---|---|---|---|"]
        for c in t.curve:
            p = "not tested" if c["pvalue"] is None else f"{c['pvalue']:.3g}"
            lines.append(f"| {c['target_reduction']:.0%} | {c['risk_result']:.4f} | {c['risk_call']:.4f} | {p} | "
                         f"{c['chars_discarded']:.1%} |")
    lines += ["", "## What this does not promise", "",
              "- Labels are a lexical hindsight proxy: influence on reasoning without copying is not seen.",
              "- Sessions from other agents, models, tool mixes or judge versions are a different distribution: "
              "re-run SHADOW and recalibrate for each (a compactor refuses thresholds stamped for another judge).", ""]
    if result.per_tool:
        lines += ["## Per tool", "", "| tool | sessions | pairs | certified | discard | keep | R_result | R_call "
                  "| results let go |", "|---|---|---|---|---|---|---|---|---|"]
        for g in result.per_tool:
            lines.append(f"| {g.group} | {g.n_sessions} | {g.n_rows} | {'yes' if g.certified else 'no'} | "
                         f"{g.discard_threshold:.4g} | {g.keep_threshold:.4g} | {g.risk_result:.4f} | "
                         f"{g.risk_call:.4f} | {g.chars_discarded:.1%} |")
        lines.append("")
    lines += ["## Calibration curve (selected points)", "",
              "| calibrated d | raw d | R_result | R_call | p-value | pairs | chars |", "|---|---|---|---|---|---|---|"]
    for c in s.curve[:: max(1, len(s.curve) // 12)]:
        p = "not tested" if c["pvalue"] is None else f"{c['pvalue']:.3g}"
        lines.append(f"| {c['calibrated']:.4g} | {c['raw']:.4g} | {c['risk_result']:.4f} | {c['risk_call']:.4f} | {p} "
                     f"| {c['pairs_discarded']:.1%} | {c['chars_discarded']:.1%} |")
    lines.append("")
    lines += [f"![{name}]({name})" for name in images]
    return "\n".join(lines) + "\n"


def report(result: Calibration, out_dir: str | Path) -> dict[str, Any]:
    """Write `thresholds.json` (only when something was certified), `calibration.json`, `report.md` and the
    figures; each file is written whole or not at all."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    images = figures(result, out)
    _write(out / "report.md", markdown(result, images).encode())
    summary = {"certified": result.certified, "guarantee": guarantee(result),
               "risks": {"R_result": "per session, the share of later-needed results let go (dropped or truncated)",
                         "R_call": "per session, the share of later-needed calls dropped"},
               "calibrated_for": result.stamp(),
               "config": result.config() if result.certified else None,
               "overall": _selection_json(result.overall), "per_tool": [_selection_json(t) for t in result.per_tool],
               "target": None if result.target is None else {
                   k: getattr(result.target, k) for k in ("certified", "target_reduction", "risk_result", "risk_call",
                                                          "pvalue", "upper_result", "upper_call", "chars_discarded",
                                                          "n_sessions", "n_points", "message")},
               "figures": images}
    _write(out / "calibration.json", orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    if result.certified:
        _write(out / "thresholds.json", orjson.dumps(result.config(), option=orjson.OPT_INDENT_2))
    elif (out / "thresholds.json").exists():
        (out / "thresholds.json").unlink()  # never leave an older, uncertified threshold behind
    return summary


def _write(path: Path, data: bytes) -> None:
    part = path.with_name(f".{path.name}.part")
    part.write_bytes(data)
    os.replace(part, path)


def _selection_json(s: Selection) -> dict[str, Any]:
    return {k: getattr(s, k) for k in ("group", "alpha", "delta", "bound", "n_sessions", "n_rows", "certified",
                                       "discard_threshold", "keep_threshold", "calibrated_discard", "risk_result",
                                       "risk_call", "pvalue", "upper_result", "upper_call", "pairs_discarded",
                                       "chars_discarded", "uncertain_rate", "sessions_needed", "more_sessions",
                                       "recency", "message")}
