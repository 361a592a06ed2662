"""Per-metric linear mixed models, contrasts and Wald tests, with guards that never fail silently.

The model is ``score ~ C(provider, Treatment(ref)) * C(task_type, Treatment(first)) + (1 |
question)`` fitted by maximum likelihood (statsmodels MixedLM, ``reml=False``). The design matrix is
built here, column for column as patsy would, so the reference levels are pinned and the column
names are readable (``provider[T.B]``, ``provider[T.B]:task_type[T.business_brief]``); tests check
it against the formula interface. A metric present in one task type only fits ``score ~ provider``.

Contrasts of provider B against the reference A, with K task types in the model (first = reference):

* per task type k: ``beta_B`` (k = first) or ``beta_B + gamma_{B,k}``;
* equal-weight marginal: ``beta_B + (1/K) * sum_{k != first} gamma_{B,k}``.

Wald: estimate ``c'b``, standard error ``sqrt(c' V c)`` with V the fixed-effect block of
``cov_params()``, ``z = estimate / se``, two-sided normal p.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from analysis._data import finite_or_none
from analysis._minimum import too_few_paired
from analysis._schema import EQUAL_WEIGHT, Contrast, Guard, GuardKind, MetricModel, Severity
from ledgerbench_core._clustered import cluster_codes, random_intercept_cluster_scores, t_p_value

INTERCEPT = "Intercept"
RESIDUAL_FLOOR = 1e-10
"""A residual variance at or below this means a degenerate fit: its standard errors mean nothing."""


def provider_term(provider: str) -> str:
    return f"provider[T.{provider}]"


def task_term(task_type: str) -> str:
    return f"task_type[T.{task_type}]"


def interaction_term(provider: str, task_type: str) -> str:
    return f"{provider_term(provider)}:{task_term(task_type)}"


def design_matrix(
    data: pd.DataFrame, reference: str, providers: list[str], task_types: list[str]
) -> pd.DataFrame:
    """Treatment-coded fixed effects: intercept, providers, task types, provider x task type.

    ``providers`` excludes the reference; ``task_types[0]`` is the reference task type.
    """
    columns: dict[str, np.ndarray] = {INTERCEPT: np.ones(len(data))}
    is_provider = {p: (data["provider"] == p).to_numpy(float) for p in providers}
    is_task = {t: (data["task_type"] == t).to_numpy(float) for t in task_types[1:]}
    columns.update({provider_term(p): is_provider[p] for p in providers})
    columns.update({task_term(t): is_task[t] for t in task_types[1:]})
    for p in providers:
        for t in task_types[1:]:
            columns[interaction_term(p, t)] = is_provider[p] * is_task[t]
    return pd.DataFrame(columns, index=data.index)


def formula_text(reference: str, task_types: list[str]) -> str:
    if len(task_types) == 1:
        return f"score ~ C(provider, Treatment('{reference}'))  + (1 | question_id)"
    return (
        f"score ~ C(provider, Treatment('{reference}')) * "
        f"C(task_type, Treatment('{task_types[0]}')) + (1 | question_id)"
    )


def contrast_vector(
    fe_names: list[str], provider: str, task_types: list[str], scope: str
) -> np.ndarray:
    """The contrast c (length = number of fixed effects) for ``provider`` vs the reference."""
    c = np.zeros(len(fe_names))
    position = {name: i for i, name in enumerate(fe_names)}
    c[position[provider_term(provider)]] = 1.0
    others = task_types[1:]
    if scope == EQUAL_WEIGHT:
        for t in others:
            c[position[interaction_term(provider, t)]] += 1.0 / len(task_types)
    elif scope != task_types[0]:
        c[position[interaction_term(provider, scope)]] += 1.0
    return c


@dataclass
class Fit:
    fe_names: list[str]
    params: np.ndarray
    cov: np.ndarray
    converged: bool
    log_likelihood: float
    group_variance: float
    residual_variance: float
    warnings: list[str] = field(default_factory=list)


def fit_mixed_model(
    data: pd.DataFrame,
    exog: pd.DataFrame,
    fit_options: dict | None = None,
    se: str = "observed",
) -> Fit:
    """Random intercept per question, maximum likelihood; warnings captured, not printed.

    Without ``fit_options`` the exact profile-likelihood fit (:func:`fit_random_intercept`) is used:
    the same estimates as statsmodels MixedLM in milliseconds (the tests check the two agree).
    ``fit_options`` (e.g. ``maxiter``, ``method``) select statsmodels ``MixedLM.fit``; ``reml`` is
    always False, and the standard errors are statsmodels' own (observed information).
    """
    if not fit_options:
        return fit_random_intercept(
            data["score"].to_numpy(float), exog, data["question_id"].to_numpy(), se=se
        )
    from statsmodels.regression.mixed_linear_model import MixedLM

    fe_names = list(exog.columns)
    k = len(fe_names)
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        model = MixedLM(data["score"].to_numpy(float), exog, groups=data["question_id"].to_numpy())
        result = model.fit(**{**fit_options, "reml": False})
        fit = Fit(
            fe_names=fe_names,
            params=np.asarray(result.fe_params, dtype=float),
            cov=np.asarray(result.cov_params())[:k, :k],
            converged=bool(result.converged),
            log_likelihood=float(result.llf),
            group_variance=float(np.asarray(result.cov_re).ravel()[0]),
            residual_variance=float(result.scale),
        )
    fit.warnings = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return fit


LOG_RATIO_BOUNDS = (-18.0, 9.0)
"""Search range of log(group variance / residual variance) for the profile likelihood."""


def fit_random_intercept(
    y: np.ndarray, exog: pd.DataFrame, groups: np.ndarray, se: str = "observed"
) -> Fit:
    """ML fit of ``y = X b + u_question + e`` by profiling out b and the residual variance.

    With ``lam = var(u) / var(e)`` each question's covariance block is ``var(e) (I + lam J)``,
    whose inverse is ``I - w J`` with ``w = lam / (1 + n lam)``. Everything then reduces to
    per-question sums, so one likelihood evaluation costs O(questions x effects^2), and the
    one-dimensional maximum over ``lam`` (boundary ``lam = 0`` included) is found by a bounded
    scalar search. The fixed-effect covariance at the optimum (``se``): ``observed`` (default,
    statsmodels MixedLM's ``cov_params()``) is the b block of the inverse observed information of
    the profile log-likelihood in (b, lam); ``expected`` is ``var(e) (X' V^-1 X)^-1``. The two
    agree in balanced designs; in unbalanced ones the observed adds the b-lam covariance.
    """
    from scipy.optimize import minimize_scalar

    x = exog.to_numpy(dtype=float)
    codes, _ = pd.factorize(pd.Series(groups), sort=False)
    n_groups = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=n_groups).astype(float)
    x_sums = np.zeros((n_groups, x.shape[1]))
    np.add.at(x_sums, codes, x)
    y_sums = np.bincount(codes, weights=y, minlength=n_groups)
    xtx, xty, yty = x.T @ x, x.T @ y, float(y @ y)
    n_obs = len(y)

    def solve(lam: float) -> tuple[float, np.ndarray, np.ndarray, float]:
        w = lam / (1.0 + sizes * lam)
        a = xtx - (x_sums * w[:, None]).T @ x_sums
        b = xty - x_sums.T @ (w * y_sums)
        beta = np.linalg.solve(a, b)
        quad = max(yty - float(w @ y_sums**2) - float(b @ beta), 0.0)
        sigma2 = quad / n_obs
        if sigma2 <= 0:
            return math.inf, beta, a, 0.0
        loglik = -0.5 * n_obs * (math.log(2 * math.pi * sigma2) + 1.0) - 0.5 * float(
            np.log1p(sizes * lam).sum()
        )
        return -loglik, beta, a, sigma2

    with np.errstate(all="ignore"):
        search = minimize_scalar(
            lambda t: solve(math.exp(t))[0], bounds=LOG_RATIO_BOUNDS, method="bounded"
        )
        best_lam = math.exp(float(search.x))
        if solve(0.0)[0] <= solve(best_lam)[0]:
            best_lam = 0.0
        negloglik, beta, a, sigma2 = solve(best_lam)
        cov = sigma2 * np.linalg.inv(a)
        if se == "observed" and sigma2 > 0:
            cov = _observed_covariance(x, y, codes, sizes, x_sums, beta, a, best_lam)
        elif se not in ("observed", "expected"):
            raise ValueError(f"se {se!r}: use observed or expected")
    return Fit(
        fe_names=list(exog.columns),
        params=beta,
        cov=cov,
        converged=bool(search.success) and math.isfinite(negloglik),
        log_likelihood=-negloglik,
        group_variance=best_lam * sigma2,
        residual_variance=sigma2,
    )


def _observed_covariance(
    x: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    sizes: np.ndarray,
    x_sums: np.ndarray,
    beta: np.ndarray,
    a: np.ndarray,
    lam: float,
) -> np.ndarray:
    """The fixed-effect block of the inverse negative Hessian of the ML profile log-likelihood
    ``l(b, lam) = -(N/2) log S(b, lam) - (1/2) sum_g log(1 + n_g lam)``, with
    ``S = sum_g r_g' (I - w_g J) r_g`` (the residual variance profiled out), as statsmodels'
    ``MixedLM.hessian`` parameterises it (the covariance of the random effect relative to the
    residual variance, i.e. ``lam``). Per question g with ``n_g`` answers, residual sum ``s_g``
    and ``d_g = 1 + n_g lam``: ``H_bb = -N X'V0^-1 X / S``, ``H_b,lam = -N sum_g X_g'1 s_g / d_g^2
    / S`` and ``H_lam,lam = sum_g n_g^2 / (2 d_g^2) - (N/2) (S'' / S - S'^2 / S^2)`` with
    ``S' = -sum_g s_g^2 / d_g^2`` and ``S'' = 2 sum_g n_g s_g^2 / d_g^3``."""
    n_obs = len(y)
    residual = y - x @ beta
    s_g = np.bincount(codes, weights=residual, minlength=len(sizes))
    d_g = 1.0 + sizes * lam
    total = float(residual @ residual) - float(((lam / d_g) * s_g**2).sum())
    if not total > 0:  # no residual variance left: a degenerate fit, whose SE is undefined
        return np.full_like(a, np.nan)
    d_s = -float((s_g**2 / d_g**2).sum())
    d2_s = 2.0 * float((sizes * s_g**2 / d_g**3).sum())
    k = x.shape[1]
    hessian = np.zeros((k + 1, k + 1))
    hessian[:k, :k] = -n_obs * a / total
    cross = -n_obs * (x_sums * (s_g / d_g**2)[:, None]).sum(axis=0) / total
    hessian[:k, k] = hessian[k, :k] = cross
    hessian[k, k] = 0.5 * float((sizes**2 / d_g**2).sum()) - 0.5 * n_obs * (
        d2_s / total - d_s**2 / total**2
    )
    try:
        return np.linalg.inv(-hessian)[:k, :k]
    except np.linalg.LinAlgError:
        return np.full_like(a, np.nan)


def wald(fit: Fit, c: np.ndarray) -> tuple[float, float, float, float]:
    """(estimate, se, z, two-sided p); se/z/p are NaN when the variance is undefined."""
    estimate = float(c @ fit.params)
    variance = float(c @ fit.cov @ c)
    if not math.isfinite(variance) or variance <= 0:
        return estimate, math.nan, math.nan, math.nan
    se = math.sqrt(variance)
    z = estimate / se
    return estimate, se, z, float(2.0 * scipy_stats.norm.sf(abs(z)))


@dataclass
class MetricInput:
    metric: str
    data: pd.DataFrame
    """Columns provider, question_id, task_type, score (one row per provider and question)."""
    reference: str
    providers: list[str]
    """All providers, reference first."""
    task_types: list[str]
    """Task types with scores for this metric, in display order (first = model reference)."""
    min_observations: int = 5
    fit_options: dict = field(default_factory=dict)
    """Extra ``MixedLM.fit`` arguments (tests use ``maxiter``)."""
    all_pairs: bool = False
    """Also test every pair of non-reference providers from the same fit (pooled model)."""
    se: str = "observed"
    """Standard errors from the ``observed`` (statsmodels') or ``expected`` information."""
    clusters: dict[str, str] | None = None
    """question_id -> cluster key (keys distinct across task types), given when some task
    type's items are clustered: every contrast's SE is then the cluster-robust sandwich of the
    fit (:class:`StratifiedSandwich`), tested by t; None: the model's own SE, normal test."""


@dataclass
class StratifiedSandwich:
    """Cluster-robust (CR1) variances of contrasts of one fit, task types as independent strata.

    A contrast ``c'b`` has per-cluster influence ``a_g = c' B s_g`` (B the bread, ``s_g`` the
    cluster's ``X_g' V_g^-1 e_g``); its variance is ``sum_k G_k/(G_k-1) sum_{g in k} a_g^2`` over
    the task types k, with Welch-Satterthwaite df from the strata's ``G_k - 1`` (one task type:
    the plain CR1 sandwich with G - 1 df, as in the pairwise fits). Strata a contrast does not
    involve contribute nothing."""

    bread: np.ndarray
    scores: np.ndarray
    """``[G, k]`` per-cluster scores."""
    strata: np.ndarray
    """``[G]`` task-type code of each cluster."""

    @classmethod
    def of(
        cls, data: pd.DataFrame, exog: pd.DataFrame, fit: Fit, clusters: dict[str, str]
    ) -> StratifiedSandwich:
        questions = data["question_id"].to_numpy()
        keys = [clusters.get(q, f"item:{q}") for q in questions]
        bread, scores = random_intercept_cluster_scores(
            exog.to_numpy(float),
            data["score"].to_numpy(float),
            questions,
            np.array(keys, dtype=object),
            fit.params,
            fit.group_variance,
            fit.residual_variance,
        )
        task_of = dict(zip(keys, data["task_type"], strict=True))
        return cls(bread, scores, cluster_codes([task_of[k] for k in dict.fromkeys(keys)]))

    def contrast(self, c: np.ndarray) -> tuple[float, float, int]:
        """(se, df, clusters contributing) of ``c'b``; NaN se from a stratum of 1 cluster."""
        influence = self.scores @ (self.bread @ c)
        parts = []
        for stratum in range(int(self.strata.max()) + 1):
            a = influence[self.strata == stratum]
            parts.append((len(a), float((a**2).sum())))
        largest = max(v for _, v in parts)
        used = [(g, v) for g, v in parts if v > 1e-12 * largest]
        if not used or any(g < 2 for g, _ in used):
            return math.nan, math.nan, sum(g for g, _ in used)
        variances = [(g, g / (g - 1) * v) for g, v in used]
        total = sum(v for _, v in variances)
        df = total**2 / sum(v**2 / (g - 1) for g, v in variances)
        return math.sqrt(total), float(df), sum(g for g, _ in variances)


def analyse_metric(inp: MetricInput) -> tuple[MetricModel, list[Guard]]:
    """Fit the metric's model and test every provider against the reference (guards included)."""
    guards: list[Guard] = []
    model = MetricModel(
        metric=inp.metric,
        formula=formula_text(inp.reference, inp.task_types),
        task_types=inp.task_types,
    )
    others = [p for p in inp.providers if p != inp.reference]
    excluded = _excluded_providers(inp, guards)
    kept = [p for p in others if p not in excluded]
    data = inp.data[inp.data["provider"].isin([inp.reference, *kept])]
    model.providers = [inp.reference, *kept] if inp.reference not in excluded else []
    model.observations, model.questions = len(data), data["question_id"].nunique()
    reason = _model_level_reason(inp, data, excluded, kept, guards)
    if reason is None:
        reason = _fit_and_test(inp, data, kept, model, guards)
    model.not_tested_reason = reason
    for provider in others:
        if not any(
            c.provider == provider and c.reference == inp.reference for c in model.contrasts
        ):
            why = excluded.get(provider, reason or "not tested")
            model.contrasts.extend(_untested(inp, provider, why))
    if inp.all_pairs:
        for i, first in enumerate(others):
            for second in others[i + 1 :]:
                if not any((c.provider, c.reference) == (second, first) for c in model.contrasts):
                    why = excluded.get(first) or excluded.get(second) or reason or "not tested"
                    model.contrasts.extend(_untested(inp, second, why, against=first))
    order = {p: i for i, p in enumerate(inp.providers)}
    scopes = {s: i for i, s in enumerate([EQUAL_WEIGHT, *inp.task_types])}
    model.contrasts.sort(key=lambda c: (order[c.reference], order[c.provider], scopes[c.scope]))
    return model, guards


def _excluded_providers(inp: MetricInput, guards: list[Guard]) -> dict[str, str]:
    """Providers left out of the model, with the reason (few observations, an empty task type)."""
    excluded: dict[str, str] = {}
    counts = inp.data.groupby(["provider", "task_type"]).size()
    for provider in inp.providers:
        total = int(counts.get(provider, pd.Series(dtype=int)).sum())
        if total < inp.min_observations:
            why = (
                f"{provider} has {total} scored observation(s) for {inp.metric}; "
                f"at least {inp.min_observations} are needed"
            )
            excluded[provider] = why
            guards.append(_guard(GuardKind.few_observations, inp.metric, provider, None, why))
            continue
        empty = [t for t in inp.task_types if counts.get((provider, t), 0) == 0]
        if empty and len(inp.task_types) > 1:
            why = (
                f"{provider} has no {inp.metric} scores for {', '.join(empty)}, so its "
                f"provider x task-type term cannot be estimated (singular design)"
            )
            excluded[provider] = why
            guards.append(_guard(GuardKind.singular_design, inp.metric, provider, None, why))
    return excluded


def _model_level_reason(
    inp: MetricInput,
    data: pd.DataFrame,
    excluded: dict[str, str],
    kept: list[str],
    guards: list[Guard],
) -> str | None:
    if inp.reference in excluded:
        return f"the reference is excluded: {excluded[inp.reference]}"
    if not kept:
        return (
            "no provider other than the reference can be tested"
            if len(inp.providers) > 1
            else ("a single provider: nothing to compare")
        )
    if data["score"].nunique() <= 1:
        value = data["score"].iloc[0] if len(data) else math.nan
        why = f"every {inp.metric} score is {value:g}: zero variance, nothing to test"
        guards.append(_guard(GuardKind.zero_variance, inp.metric, None, None, why))
        return why
    for provider in [inp.reference, *kept]:
        scores = data.loc[data["provider"] == provider, "score"]
        if scores.nunique() == 1:
            guards.append(
                Guard(
                    kind=GuardKind.constant_provider,
                    severity=Severity.warning,
                    metric=inp.metric,
                    provider=provider,
                    message=(
                        f"every {inp.metric} score of {provider} is {scores.iloc[0]:g}; the "
                        f"model's equal-variance assumption is strained, read its p-values "
                        "with care"
                    ),
                )
            )
    return None


def _fit_and_test(
    inp: MetricInput, data: pd.DataFrame, kept: list[str], model: MetricModel, guards: list[Guard]
) -> str | None:
    exog = design_matrix(data, inp.reference, kept, inp.task_types)
    if np.linalg.matrix_rank(exog.to_numpy()) < exog.shape[1]:
        why = "the design matrix is singular (some provider x task-type effect is not estimable)"
        guards.append(_guard(GuardKind.singular_design, inp.metric, None, None, why))
        return why
    try:
        fit = fit_mixed_model(data, exog, inp.fit_options, se=inp.se)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
        # The design has full rank here, so a singular matrix is the fit's information matrix
        # (typically a variance estimated at zero), not the design.
        why = f"the model could not be fitted ({type(exc).__name__}: {exc})"
        guards.append(_guard(GuardKind.fit_error, inp.metric, None, None, why))
        return why
    model.fitted, model.converged = True, fit.converged
    model.log_likelihood = finite_or_none(fit.log_likelihood)
    model.group_variance = finite_or_none(fit.group_variance)
    model.residual_variance = finite_or_none(fit.residual_variance)
    model.warnings = fit.warnings
    for message in fit.warnings:
        guards.append(
            Guard(
                kind=GuardKind.convergence_warning,
                severity=Severity.warning,
                metric=inp.metric,
                message=f"the {inp.metric} model warned: {message}",
            )
        )
    if not fit.converged:
        why = "the mixed model did not converge"
        guards.append(_guard(GuardKind.not_converged, inp.metric, None, None, why))
        return why
    robust = None
    if inp.clusters is not None and fit.residual_variance > RESIDUAL_FLOOR:
        robust = StratifiedSandwich.of(data, exog, fit, inp.clusters)
    for provider in kept:
        model.contrasts.extend(_tested(inp, data, fit, provider, guards, robust=robust))
    if inp.all_pairs:
        for i, first in enumerate(kept):
            for second in kept[i + 1 :]:
                model.contrasts.extend(
                    _tested(inp, data, fit, second, guards, against=first, robust=robust)
                )
    return None


def _tested(
    inp: MetricInput,
    data: pd.DataFrame,
    fit: Fit,
    provider: str,
    guards: list[Guard],
    against: str | None = None,
    robust: StratifiedSandwich | None = None,
) -> list[Contrast]:
    """Contrasts of ``provider`` against the reference, or against ``against`` (another
    non-reference provider of the same fit: the difference of the two contrast vectors). With
    ``robust`` the SE is cluster-robust and the test a t test (the model's SE: ``naive_se``)."""
    contrasts = []
    for scope in [EQUAL_WEIGHT, *inp.task_types]:
        c = contrast_vector(fit.fe_names, provider, inp.task_types, scope)
        if against is not None:
            c = c - contrast_vector(fit.fe_names, against, inp.task_types, scope)
        contrast = Contrast(
            provider=provider,
            reference=against or inp.reference,
            metric=inp.metric,
            scope=scope,
            tested=True,
            contrast_vector={n: float(v) for n, v in zip(fit.fe_names, c, strict=True) if v},
        )
        few = _few_in_scope(inp, data, provider, scope, against)
        estimate, se, z, p = wald(fit, c)
        if robust is not None and math.isfinite(se):
            contrast.naive_se = se
            se, df, contrast.clusters = robust.contrast(c)
            z = estimate / se if se > 0 else math.nan
            p = t_p_value(estimate, se, df) if se > 0 else math.nan
            contrast.df = finite_or_none(df)
        contrast.lmm_estimate = finite_or_none(estimate)
        if few:
            contrast.tested, contrast.not_tested_reason = False, few
            guards.append(_guard(GuardKind.few_observations, inp.metric, provider, scope, few))
        elif not (math.isfinite(se) and se > 0) or not fit.residual_variance > RESIDUAL_FLOOR:
            why = (
                "the standard error is undefined: the fit has no residual variance left "
                "(scores constant within each provider), a NaN covariance or fewer than 2 "
                "clusters in a task type"
            )
            contrast.tested, contrast.not_tested_reason = False, why
            guards.append(_guard(GuardKind.undefined_se, inp.metric, provider, scope, why))
        else:
            contrast.lmm_se, contrast.z, contrast.p_value = se, z, p
        contrasts.append(contrast)
    return contrasts


def _few_in_scope(
    inp: MetricInput, data: pd.DataFrame, provider: str, scope: str, against: str | None = None
) -> str | None:
    """The one rule (:mod:`analysis._minimum`): paired answers in every task type of the scope."""
    first = against or inp.reference
    tasks = inp.task_types if scope == EQUAL_WEIGHT else [scope]
    paired = {}
    for task_type in tasks:
        cell = data[data["task_type"] == task_type]
        have = [set(cell.loc[cell["provider"] == who, "question_id"]) for who in (first, provider)]
        paired[task_type] = len(have[0] & have[1])
    return too_few_paired(paired, (first, provider), inp.metric, inp.min_observations)


def _untested(
    inp: MetricInput, provider: str, why: str, against: str | None = None
) -> list[Contrast]:
    return [
        Contrast(
            provider=provider,
            reference=against or inp.reference,
            metric=inp.metric,
            scope=scope,
            tested=False,
            not_tested_reason=why,
        )
        for scope in [EQUAL_WEIGHT, *inp.task_types]
    ]


def _guard(
    kind: GuardKind, metric: str, provider: str | None, task_type: str | None, message: str
) -> Guard:
    return Guard(
        kind=kind,
        severity=Severity.not_tested,
        metric=metric,
        provider=provider,
        task_type=None if task_type == EQUAL_WEIGHT else task_type,
        message=message,
    )
