"""Judge: an LLM rubric judge (DSPy) and deterministic checks, scoring on eight dimensions.

Heavy dependencies (DSPy, scipy, matplotlib) load only when a judge or statistic is used.
"""

from judge._base import (
    Judge,
    JudgeAbort,
    JudgeItem,
    JudgeOutcome,
    dimension_from_assertions,
    overall_score,
)
from judge._compare import Comparison, compare_judges, kendalls_w
from judge._dspy_judge import DspyJudge, judge_slug
from judge._erp_links import find_erp_links
from judge._registry import JudgeLoadError, create_judge, judge
from judge._rules import RULES_BY_ASSERTION, RulesJudge, check_fact, rule_for
from judge._runner import (
    CombinedJudge,
    JudgeRunConfig,
    JudgeRunError,
    JudgeRunResult,
    read_scores,
    run_judge,
    score_trajectory,
)
from judge._summary import summarize, summary_markdown
from ledgerbench_core._overall import (
    ScoredAnswer,
    dimension_means,
    overall,
    overall_text,
    run_overall,
    scored_answers,
)
from ledgerbench_core.scores import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)

__all__ = [
    "RULES_BY_ASSERTION",
    "AssertionScore",
    "CombinedJudge",
    "Comparison",
    "DimensionScore",
    "DimensionStatus",
    "DspyJudge",
    "Judge",
    "JudgeAbort",
    "JudgeItem",
    "JudgeLoadError",
    "JudgeManifest",
    "JudgeOutcome",
    "JudgeRunConfig",
    "JudgeRunError",
    "JudgeRunResult",
    "RulesJudge",
    "ScoreRecord",
    "ScoreStatus",
    "ScoredAnswer",
    "check_fact",
    "compare_judges",
    "create_judge",
    "dimension_from_assertions",
    "dimension_means",
    "find_erp_links",
    "judge",
    "judge_slug",
    "kendalls_w",
    "overall",
    "overall_score",
    "overall_text",
    "read_scores",
    "rule_for",
    "run_judge",
    "run_overall",
    "score_trajectory",
    "scored_answers",
    "summarize",
    "summary_markdown",
]
