"""Does a judge favour answers of its own model family? (the paper's judge-bias question)

Every (run, judge) pair contributes one row per scored answer: the overall score, the judge's
family and the family of the model that wrote the answer. The fit is

    overall ~ C(judge_family) + C(provider_family) + own_family

by least squares with standard errors clustered by question: the judge and provider main effects
absorb "this judge is strict" and "this provider is better"; ``own_family`` (1 when the judge and
the answer come from the same family) is what is left: self-preference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAMILY_PATTERNS = (
    ("openai", r"\b(?:gpt|o[1-9](?:-mini)?|chatgpt|openai|codex)\b|^gpt"),
    ("anthropic", r"claude|anthropic"),
    ("google", r"gemini|gemma|google|vertex"),
    ("meta", r"llama|meta"),
    ("mistral", r"mistral|mixtral|codestral"),
    ("qwen", r"qwen"),
    ("deepseek", r"deepseek"),
    ("xai", r"grok|xai"),
)


def model_family(*names: str | None) -> str | None:
    """Family of a model string (``openai/gpt-5.2`` -> openai, ``claude-sonnet-4-5`` ->
    anthropic); None when nothing matches (the scripted agent, rules, people)."""
    text = " ".join(n for n in names if n).lower()
    if not text:
        return None
    prefix = text.split("/", 1)[0] if "/" in text else ""
    for family, pattern in FAMILY_PATTERNS:
        if prefix == family or re.search(pattern, text.replace("/", " ")):
            return family
    return None


@dataclass
class SelfPreference:
    rows: int = 0
    judge_families: list[str] = field(default_factory=list)
    provider_families: list[str] = field(default_factory=list)
    effect: float | None = None
    """Own-family coefficient on the 0-1 scale."""
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    by_judge: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    """Per judge family: mean score of own-family answers, of other families', and n."""
    reason: str | None = None
    """Why there is no fit."""

    def line(self) -> str:
        if self.effect is None:
            return f"Self-preference: not estimated ({self.reason})."
        favours = (
            "judges favour their own family"
            if self.low is not None and self.low > 0
            else "judges disfavour their own family"
            if self.high is not None and self.high < 0
            else "no evidence that judges favour their own family"
        )
        return (
            f"Self-preference: {favours}: own-family effect {self.effect:+.3f} "
            f"[{self.low:+.3f}, {self.high:+.3f}], p = {self.p_value:.3g} "
            f"({self.rows} scores; judge families {', '.join(self.judge_families)}; "
            f"provider families {', '.join(self.provider_families)})."
        )


def self_preference_rows(
    runs: dict[str, Path], judges: list[str], scores: dict[tuple[str, str], list[Any]]
) -> list[dict[str, Any]]:
    """Long rows (question, judge, judge_family, provider_family, score) over runs x judges.

    ``scores[(run label, judge)]`` are that judge's ScoreRecords for the run.
    """
    from ledgerbench_core.scores import JudgeManifest
    from ledgerbench_core.trajectory import RunManifest

    rows = []
    for label, run_dir in runs.items():
        manifest = RunManifest.model_validate_json((run_dir / "manifest.json").read_text())
        provider = model_family(manifest.model, manifest.harness) or "none"
        for judge in judges:
            path = run_dir / "scores" / f"{judge}.manifest.json"
            if not path.exists():
                continue
            judge_manifest = JudgeManifest.model_validate_json(path.read_text())
            family = model_family(judge_manifest.model, judge)
            if family is None:
                continue
            for record in scores.get((label, judge), []):
                if record.overall is None:
                    continue
                rows.append(
                    {
                        "question": record.question_id,
                        "run": label,
                        "judge": judge,
                        "judge_family": family,
                        "provider_family": provider,
                        "own": int(family == provider),
                        "score": record.overall,
                    }
                )
    return rows


def fit_self_preference(rows: list[dict[str, Any]]) -> SelfPreference:
    result = SelfPreference(rows=len(rows))
    judge_families = sorted({r["judge_family"] for r in rows})
    provider_families = sorted({r["provider_family"] for r in rows})
    result.judge_families, result.provider_families = judge_families, provider_families
    for family in judge_families:
        own = [r["score"] for r in rows if r["judge_family"] == family and r["own"]]
        other = [r["score"] for r in rows if r["judge_family"] == family and not r["own"]]
        result.by_judge[family] = {
            "own_mean": sum(own) / len(own) if own else None,
            "other_mean": sum(other) / len(other) if other else None,
            "n_own": len(own),
            "n_other": len(other),
        }
    if len(judge_families) < 2 or len(provider_families) < 2:
        result.reason = (
            "needs judges of two or more model families scoring runs of two or more provider "
            f"families; have judges {judge_families or ['none']}, providers "
            f"{provider_families or ['none']}"
        )
        return result
    if not any(r["own"] for r in rows) or all(r["own"] for r in rows):
        result.reason = "no judge scored answers of its own family (or only those)"
        return result
    import pandas as pd
    import statsmodels.formula.api as smf

    frame = pd.DataFrame(rows)
    fit = smf.ols("score ~ C(judge_family) + C(provider_family) + own", data=frame).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["question"])[0]}
    )
    if "own" not in fit.params or not fit.bse.notna().all():
        result.reason = "the own-family effect is not identified by these runs"
        return result
    low, high = fit.conf_int().loc["own"]
    result.effect = float(fit.params["own"])
    result.low, result.high = float(low), float(high)
    result.p_value = float(fit.pvalues["own"])
    return result


def self_preference_markdown(result: SelfPreference) -> str:
    lines = ["", "## Self-preference (judge family x provider family)", "", result.line()]
    if result.by_judge:
        lines += [
            "",
            "| judge family | own-family answers | mean | other answers | mean |",
            "|---|---:|---:|---:|---:|",
        ]
        for family, cell in result.by_judge.items():
            own = "-" if cell["own_mean"] is None else f"{cell['own_mean']:.3f}"
            other = "-" if cell["other_mean"] is None else f"{cell['other_mean']:.3f}"
            lines.append(f"| {family} | {cell['n_own']} | {own} | {cell['n_other']} | {other} |")
    return "\n".join(lines) + "\n"
