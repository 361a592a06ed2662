"""The ``stats.json`` schema: every number the report shows, in one documented pydantic model.

Conventions used throughout:

* ``metric`` is one of the eight judge dimensions, ``overall`` or ``answer_mean``. ``overall`` is
  the paper's Overall: the mean of the provider's dimension scores, each dimension an equal-weight
  mean over the task types it applies to (interval from the same bootstrap resamples).
  ``answer_mean`` is the judge's per-answer mean of the scored dimensions, averaged like a
  dimension (it weighs a dimension by how many answers it applies to: accuracy counts 1/21).
  LedgerBench's extension adds ``research_accuracy`` (accuracy of research items keyed on a
  world; ``accuracy`` stays obligations-only, as in the paper) and the retrieval figures
  ``shown_recall``, ``fetched_recall``, ``citation_precision`` and ``citation_recall``
  (``Stats.research_metrics``).
* ``scope`` is a task type (``obligations``, ``entity_performance``, ``business_brief``) or
  ``equal_weight``: the mean over the task types in which the metric exists, each task type weighing
  the same whatever its number of questions (the paper's headline convention).
* Scores are in [0, 1]. Only dimension scores with status ``scored`` enter any statistic; missing
  scores (judge error, needs LLM, not applicable, no judge record) are counted, never treated as 0.
* Intervals are percentile bootstrap intervals (questions resampled within task type, the same
  resample for every provider and every metric, so differences are paired).
* Contrasts compare every pair of providers. By default (``model: pairwise``) each pair's mixed
  model is fitted on that pair's data only, so a third provider cannot change the pair's verdict;
  ``pooled`` fits all providers in one model (the paper's choice).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from analysis._conversations import ConversationCell

STATS_FORMAT_VERSION = 4
EQUAL_WEIGHT = "equal_weight"
"""``scope`` value for the equal-weight mean across task types."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Correction(StrEnum):
    none = "none"
    """No multiple-comparison correction (the paper's choice)."""
    holm = "holm"
    """Holm-Bonferroni across metrics (family-wise error)."""
    bh = "bh"
    """Benjamini-Hochberg across metrics (false discovery rate)."""


class ModelKind(StrEnum):
    pairwise = "pairwise"
    """One mixed model per pair of providers, on that pair's data only (default)."""
    pooled = "pooled"
    """One mixed model with every provider, one residual variance (the paper's model)."""


class StandardErrors(StrEnum):
    observed = "observed"
    """From the observed information: the inverse Hessian of the profile log-likelihood in the
    fixed effects and the variance ratio, its fixed-effect block (what statsmodels MixedLM's
    ``cov_params()`` gives; the default)."""
    expected = "expected"
    """From the expected information: ``(X' V^-1 X)^-1``, which ignores the fixed effects' and
    variances' covariance (equal to the observed in balanced designs, smaller in unbalanced)."""


class InfraFailures(StrEnum):
    exclude = "exclude"
    """Infrastructure failures are left out of every score (default)."""
    zero = "zero"
    """Infrastructure failures score 0 on every dimension that applies (the paper's choice)."""


class Settings(_Strict):
    reference: str
    """Provider every other provider is compared against."""
    judge: str
    """Name of the scores file used (``scores/<judge>.jsonl``)."""
    correction: Correction = Correction.none
    bootstrap: int = 1000
    """Number of bootstrap resamples (B)."""
    seed: int = 0
    confidence: float = 0.95
    min_observations: int = 5
    """A provider with fewer scored observations for a metric (or a task type) is not tested."""
    pass_threshold: float = 1.0
    """An obligations answer counts as correct when its accuracy score is at least this."""
    latency_budget: dict[str, float] = Field(default_factory=dict)
    """Task type -> seconds; answers slower than this were re-scored as failures (0)."""
    model: ModelKind = ModelKind.pairwise
    infra_failures: InfraFailures = InfraFailures.exclude
    se: StandardErrors = StandardErrors.observed
    """How the mixed models' standard errors are computed (``--se``)."""
    power: float = 0.8
    """Power for the minimum detectable difference (two-sided test at 1 - confidence)."""
    cluster: str = "auto"
    """What items are clustered by (``--cluster``): ``auto`` (the item's ``template``, else its
    research ``kind``), ``none`` (every item its own cluster: the naive analysis) or any other
    scalar field of the dataset items' ``metadata``."""


class ProviderInfo(_Strict):
    name: str
    """Label used everywhere in the report."""
    source: str
    """``run`` (a LedgerBench run directory) or ``published`` (a FORCE-Bench eval_results file)."""
    path: str
    harness: str | None = None
    model: str | None = None
    judge: str | None = None
    trajectories: int = 0
    """Trajectory records read (one per question and trial)."""
    questions: int = 0
    trials: int = 1
    """Largest number of trials seen for one question."""
    dataset_path: str | None = None
    dataset_hash: str | None = None
    research: str | None = None
    """The run's research mode (``--research``): ``world`` (the research world's tools), ``web``
    (live web tools, or a published FORCE-Bench file), ``none`` (no research tools: the
    memorisation floor) or ``golden`` (gold documents in the prompt: the reasoning ceiling)."""
    judged: str = ""
    """Beside every figure of the provider: "14/100 scored" when its judge scored only part of
    the run, and the grading version (``ledgerbench_core._coverage.Coverage.label``)."""
    partly_judged: bool = False
    grading_version: str | None = None
    """The grading version of the scores the figures use (``ScoreRecord.grading_version``)."""
    tools: str | None = None
    """The MCP tools the agent was offered: the run's ``--tools`` as given (``all`` without it)
    and how many tools that was, e.g. ``finance,world (30)``; None: not recorded."""


class GuardKind(StrEnum):
    few_observations = "few_observations"
    zero_variance = "zero_variance"
    constant_provider = "constant_provider"
    not_converged = "not_converged"
    undefined_se = "undefined_se"
    singular_design = "singular_design"
    convergence_warning = "convergence_warning"
    fit_error = "fit_error"
    missing_scores = "missing_scores"
    direction_disagrees = "direction_disagrees"
    unpaired_questions = "unpaired_questions"
    verdicts_disagree = "verdicts_disagree"
    missing_task_type = "missing_task_type"
    different_dimensions = "different_dimensions"


class Severity(StrEnum):
    not_tested = "not_tested"
    """The comparison was not tested; ``message`` says why."""
    warning = "warning"
    """The comparison was tested, but read it with care."""
    info = "info"


class Guard(_Strict):
    kind: GuardKind
    severity: Severity
    metric: str | None = None
    provider: str | None = None
    task_type: str | None = None
    message: str
    """Plain-words explanation, shown in the report."""


class Interval(_Strict):
    estimate: float | None
    """Point estimate (a mean or a difference of means); None when there is no data."""
    ci_low: float | None = None
    ci_high: float | None = None


class ScoreCell(_Strict):
    provider: str
    metric: str
    scope: str
    """Task type or ``equal_weight``."""
    n: int
    """Scored questions (for ``equal_weight``: summed over task types)."""
    score: Interval
    """The mean with its clustered t interval (cluster-robust SE, Satterthwaite df; one task
    type: clusters - 1); no interval from fewer than 2 clusters."""
    se: float | None = None
    """Clustered standard error of the mean."""
    df: float | None = None
    """Degrees of freedom of the t interval."""
    naive: Interval | None = None
    """The same mean with the naive t interval (every item its own cluster), for comparison."""
    difference: Interval | None = None
    """Score minus the reference's score, paired cluster-bootstrap interval; None for the
    reference."""


class Contrast(_Strict):
    provider: str
    reference: str
    metric: str
    scope: str
    """Task type (per-task-type contrast) or ``equal_weight`` (marginal contrast)."""
    tested: bool
    not_tested_reason: str | None = None
    lmm_estimate: float | None = None
    """c'b from the mixed model: the provider's advantage over the reference."""
    lmm_se: float | None = None
    """sqrt(c' V c) with V the fixed-effect block of cov_params()."""
    z: float | None = None
    p_value: float | None = None
    """Two-sided Wald p-value."""
    p_adjusted: float | None = None
    """p-value after the chosen correction across metrics (equal to p_value with ``none``)."""
    significance: str = ""
    """``***`` p<0.001, ``**`` p<0.01, ``*`` p<0.05 (on p_adjusted), else empty."""
    raw_difference: float | None = None
    """Raw (equal-weight) score difference, provider minus reference."""
    direction: str | None = None
    """``higher``, ``lower`` or ``equal``: from the raw difference, never from the model."""
    contrast_vector: dict[str, float] = Field(default_factory=dict)
    """Non-zero entries of c, keyed by fixed-effect name (for checking by hand)."""
    fit: str = ""
    """Which fit the test came from: ``pairwise`` (this pair's data), ``pooled`` (all providers)
    or ``bootstrap`` (``overall``: no single-outcome model, the paired bootstrap tests it)."""
    task_types: list[str] = Field(default_factory=list)
    """Task types the contrast averages over (those both providers have)."""
    bootstrap: Interval | None = None
    """Paired bootstrap difference (provider minus reference) with its percentile interval."""
    bootstrap_p: float | None = None
    """Two-sided bootstrap p-value: twice the smaller share of resampled differences on either
    side of 0."""
    mdd: float | None = None
    """Minimum detectable difference: the smallest true difference this test would find with
    the chosen power (default 80%) at the 5% level, (z_0.975 + z_0.8) x standard error."""
    group_variance: float | None = None
    """Question (random intercept) variance of the fit behind this contrast."""
    residual_variance: float | None = None
    disagreement: str | None = None
    """Set when the bootstrap interval and the p-value disagree (one excludes 0 at 95%, the
    other is not below 0.05): one sentence saying why."""
    df: float | None = None
    """Degrees of freedom of the test and the MDD (None: normal, no clustering in the fit)."""
    clusters: int | None = None
    """Independent clusters (templates) behind the contrast, summed over its task types."""
    naive_se: float | None = None
    """Standard error ignoring the clustering (the model's own for mixed models, items as the
    unit for the Overall); ``lmm_se`` is the clustered one when the items are clustered."""
    distinguishable: bool | None = None
    """False when the difference is inside the minimum detectable difference: reported as "not
    distinguishable at this size", never with a headline p; None when not tested."""


class FitSummary(_Strict):
    providers: list[str]
    task_types: list[str] = Field(default_factory=list)
    observations: int = 0
    questions: int = 0
    converged: bool | None = None
    log_likelihood: float | None = None
    group_variance: float | None = None
    residual_variance: float | None = None


class MetricModel(_Strict):
    metric: str
    formula: str | None = None
    task_types: list[str] = Field(default_factory=list)
    """Task types in which the metric has scores."""
    providers: list[str] = Field(default_factory=list)
    """Providers in the fit (those excluded by a guard are not)."""
    observations: int = 0
    questions: int = 0
    fitted: bool = False
    converged: bool | None = None
    log_likelihood: float | None = None
    group_variance: float | None = None
    """Variance of the per-question random intercept."""
    residual_variance: float | None = None
    warnings: list[str] = Field(default_factory=list)
    """Warnings raised during the fit (ConvergenceWarning and others), captured verbatim."""
    not_tested_reason: str | None = None
    contrasts: list[Contrast] = Field(default_factory=list)
    fits: list[FitSummary] = Field(default_factory=list)
    """Every fit behind the contrasts (one per pair with ``pairwise``, one with ``pooled``)."""


class MissingCount(_Strict):
    provider: str
    metric: str
    task_type: str
    scored: int = 0
    not_applicable: int = 0
    needs_llm: int = 0
    judge_error: int = 0
    infra_error: int = 0
    """The trajectory failed (status error) and was not judged."""
    no_score_record: int = 0
    """A trajectory with no line in the scores file."""
    rescored_as_failure: int = 0
    """Answers slower than the latency budget, scored 0 here."""


class TrialStats(_Strict):
    provider: str
    metric: str
    task_type: str
    questions: int
    """Questions with at least two scored trials."""
    trials: int
    """Largest number of trials for one question."""
    mean_variance: float | None
    """Mean over questions of the variance of the score across trials (ddof=1)."""
    max_variance: float | None = None


class PassK(_Strict):
    provider: str
    k: int
    value: float | None
    """Mean over questions of C(c, k) / C(n, k): the chance that k trials drawn from n all pass."""
    questions: int
    threshold: float
    task_type: str = "obligations"
    metric: str = "accuracy"
    """The verdict's metric: obligations accuracy, research items' keyed accuracy."""


class FlipRate(_Strict):
    provider: str
    task_type: str
    metric: str
    questions: int
    """Questions with at least two scored trials."""
    flipped: int
    """Of those, questions whose verdict (metric >= the pass threshold) differs between trials."""
    rate: float


class Distribution(_Strict):
    n: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    max: float | None = None


class OperationsCell(_Strict):
    provider: str
    task_type: str
    """A task type or ``all``."""
    trajectories: int
    answered_rate: float | None
    """Share with status ok."""
    timeout_rate: float | None
    max_turns_rate: float | None
    answer_cut_rate: float | None = None
    """Share whose answer the provider cut (output cap, content filter, unknown finish reason:
    termination ``answer_cut``; part of ``max_turns_rate``)."""
    error_rate: float | None
    latency_s: Distribution
    tool_calls: Distribution
    """Tool calls per question."""
    tokens_per_question: float | None = None
    """Mean input + output tokens per question (None when no usage was recorded)."""
    cost_per_question: float | None = None
    """Mean cost in USD over questions with a known cost."""
    cost_known: int = 0
    """Questions with a known cost."""
    correct: int | None = None
    """Correct answers (obligations accuracy >= pass_threshold); None where there is no accuracy."""
    cost_per_correct: float | None = None
    """Obligations cost (where known) divided by the correct obligations answers."""
    tokens_per_correct: float | None = None
    """Obligations tokens (where recorded) divided by the correct obligations answers."""
    over_budget: int = 0
    """Answers slower than the latency budget (re-scored as failures)."""


class InfraFailureCell(_Strict):
    provider: str
    task_type: str
    reason: str
    """The run's termination reason (``provider_unavailable``, ``erp_unavailable``, ...;
    ``error`` where the input does not record it)."""
    count: int
    trajectories: int
    """All runs of the provider in the task type (the share's denominator)."""
    excluded: int
    """Of ``count``, runs left out of every score's denominator (``--infra-failures exclude``;
    0 with ``zero``, where they score 0)."""


class ScenarioCell(_Strict):
    provider: str
    scenario: str
    n: int
    accuracy: Interval
    """No interval below 5 answers (a percentile interval of 1-4 values means nothing)."""


class HeadlineCell(_Strict):
    score: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    difference: float | None = None
    """Difference from the reference (None for the reference)."""
    p_value: float | None = None
    p_adjusted: float | None = None
    significance: str = ""
    tested: bool | None = None
    """None for the reference; False when a guard stopped the test."""
    distinguishable: bool | None = None
    """False: the difference is inside the minimum detectable difference ("not
    distinguishable at this size"; no p or stars shown)."""
    mdd: float | None = None


class HeadlineRow(_Strict):
    """One provider's equal-weight scores, like the paper's Table 1."""

    provider: str
    is_reference: bool = False
    overall: HeadlineCell | None = None
    answer_mean: HeadlineCell | None = None
    accuracy: HeadlineCell | None = None
    citations: HeadlineCell | None = None
    clarity: HeadlineCell | None = None
    depth: HeadlineCell | None = None
    groundedness: HeadlineCell | None = None
    recency: HeadlineCell | None = None
    relevance: HeadlineCell | None = None
    structure: HeadlineCell | None = None


class ResearchGap(_Strict):
    """One metric's difference between two research modes of the same harness and model."""

    harness: str | None
    model: str | None = None
    gap: str
    """``golden - world`` (what retrieval costs the agent) or ``world - none`` (what the
    research tools add over memorisation)."""
    minuend: str
    """Provider of the first mode (golden, or world)."""
    subtrahend: str
    """Provider of the second mode (world, or none)."""
    metric: str
    scope: str
    difference: Interval
    """Paired bootstrap difference (minuend minus subtrahend) and its percentile interval."""
    p_value: float | None = None
    """Two-sided p of the pair's contrast after the chosen correction: the mixed-model Wald
    test; for ``overall``, the paired bootstrap's. None when a guard stopped the test."""
    significance: str = ""


class ItemDiagnostic(_Strict):
    question_id: str
    task_type: str
    pass_rate: dict[str, float] = Field(default_factory=dict)
    """Agent -> share of its scored trials that pass (baselines not included)."""
    discrimination: float | None = None
    """Point-biserial correlation across agents of the pass rate with the agent's Overall (None
    with fewer than 3 agents, where a correlation can only be +-1, or no spread)."""
    discrimination_index: float | None = None
    """Upper-lower index D: mean pass rate of the upper half of the agents by Overall minus that
    of the lower half, in [-1, 1]; with two agents, the better one's minus the worse one's (None
    with fewer than 2 agents or Overalls that do not separate the halves)."""
    always_solved: bool = False
    """Every agent passes every trial."""
    never_solved: bool = False
    """No agent passes any trial."""
    scripted: float | None = None
    """The scripted (no-LLM) baseline's pass rate, when that run is compared."""
    nothing: float | None = None
    """The ``nothing`` baseline's pass rate, when that run is compared."""


class SignalNoise(_Strict):
    task_type: str
    agents: int
    signal: float | None = None
    """SD across agents of their mean score (the judge's per-answer mean)."""
    noise: float | None = None
    """Mean across agents of the SD of their per-trial mean score (None with one trial)."""
    ratio: float | None = None
    """signal / noise: how well the task type separates agents beyond trial-to-trial noise."""


class ClusteringCell(_Strict):
    task_type: str
    by: str
    """The metadata field the items were grouped by, or ``item`` (no clustering)."""
    items: int
    clusters: int
    note: str | None = None
    """Why the setting was not applied as asked (e.g. one cluster only: items used)."""


class Stats(_Strict):
    """Everything ``analysis.compare`` computed; the reports are rendered from it."""

    version: int = STATS_FORMAT_VERSION
    created_at: dt.datetime
    settings: Settings
    providers: list[ProviderInfo]
    metrics: list[str]
    """The paper's metrics with at least one scored observation, in display order."""
    research_metrics: list[str] = Field(default_factory=list)
    """LedgerBench's extension metrics with scores (``research_accuracy``, retrieval and citation
    figures of world-keyed research items); their cells and contrasts are in ``scores`` and
    ``models`` like the others, but they are corrected as a family of their own and never enter
    ``headline`` or the Overall."""
    task_types: list[str]
    """Task types with data, in display order."""
    headline: list[HeadlineRow]
    scores: list[ScoreCell]
    models: list[MetricModel]
    """One mixed model per metric with its contrasts (empty contrasts for a single provider)."""
    guards: list[Guard]
    missing: list[MissingCount]
    trials: list[TrialStats] = Field(default_factory=list)
    pass_k: list[PassK] = Field(default_factory=list)
    infra_failures: list[InfraFailureCell] = Field(default_factory=list)
    """Infrastructure failures per provider, task type and termination reason."""
    flips: list[FlipRate] = Field(default_factory=list)
    """Per provider and task type: share of questions whose verdict changes between trials."""
    operations: list[OperationsCell]
    scenarios: list[ScenarioCell] = Field(default_factory=list)
    """Obligations accuracy per scenario."""
    research_gaps: list[ResearchGap] = Field(default_factory=list)
    """golden - world and world - none differences of the same harness and model, where the
    compared runs include both modes."""
    caveats: list[str] = Field(default_factory=list)
    """Plain-words caveats that apply to the whole report."""
    conversations: list[ConversationCell] = Field(default_factory=list)
    """Operations items (conversations): per provider and scenario kind
    (``analysis/_conversations.py``)."""
    timings_s: dict[str, float] = Field(default_factory=dict)
    """Seconds spent in each part (lmm, bootstrap, ...)."""
    clustering: list[ClusteringCell] = Field(default_factory=list)
    items: list[ItemDiagnostic] = Field(default_factory=list)
    """Per item: pass rates, discrimination, always/never solved, baselines (also items.json)."""
    signal_noise: list[SignalNoise] = Field(default_factory=list)
    """Per task type: spread between agents over spread between trials."""
    """Per task type: what items were clustered by, how many items and clusters."""
