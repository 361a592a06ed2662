"""``python -m synthetic_world questions``: keyed entity-performance and brief question sets.

The kinds, their segments, weights and phrasings are data (question_kinds.yaml); each kind's key
is the program of the same name in :mod:`synthetic_world._keys`. Items are drawn per segment in
the published mix, about a fifth of them "not disclosed" or "not yet reported", some as of an
earlier date (the key then counts only what was published by then), naming the company by name,
ticker, misspelling or its ERP account.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shlex
import sqlite3
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ledgerbench_core.dataset import (
    Ask,
    Dataset,
    DatasetHeader,
    Question,
    TaskType,
    build_tags,
    rubric_version,
    write_dataset,
)
from synthetic_world._analyst import (
    BENCHMARKS,
    cash_burn,
    penalties,
    regulatory_window,
    returns_year,
)
from synthetic_world._analyst import PROGRAMS as ANALYST_PROGRAMS
from synthetic_world._documents import long_date
from synthetic_world._keys import PROGRAMS as FACT_PROGRAMS
from synthetic_world._keys import (
    QUARTER_METRICS,
    Company,
    Key,
    KeyContext,
    KeyError_,
    quarter_text,
    reported_quarters,
)
from synthetic_world._runtime import CompanyIndex, CompanyRow, connect_read_only
from synthetic_world._traps import TrapFinder

PROGRAMS = {**FACT_PROGRAMS, **ANALYST_PROGRAMS}
"""Question kind -> its key program (single-fact kinds and analyst kinds)."""
NEGATIVE_SHARE = 0.2
"""Share of items whose key is "not disclosed", "not yet reported" or "none"."""
EARLIER_SHARE = 0.3
"""Share of items asked as of a date before the world's today."""
METRIC_CHOICES = (
    "revenue",
    "net_income",
    "operating_income",
    "gross_profit",
    "cash_from_operations",
    "total_assets",
    # shareholder returns (issue 38): the annual cash-flow statement's rows of listed companies
    "depreciation_amortization",
    "dividends_paid",
    "share_repurchases",
)
RETURN_METRICS = ("dividends_paid", "share_repurchases")
"""Cash returned to shareholders: asked only of a year the company returned some."""
VERSIONED_SHARE = 0.35
"""Share of fiscal-year figure questions drawn about a company with a restated or revised year."""
VERSIONED_METRICS = ("revenue", "gross_profit", "operating_income", "net_income")
"""The figures a restatement or a revision changes."""
TRAP_TRIES = 250
"""Draws of an item that must meet a hard negative before one without is taken."""
ASSIGNED_TRIES = 200
"""Draws of an analyst slot's own kind before any analyst kind of its segment may fill it."""
MIN_PER_KIND = 2
"""Analyst slots each analyst kind of a segment gets before the weights share out the rest."""
NEGATIVE_ANALYST = {"private_runway": 0.25}
"""Analyst kinds drawn as "not disclosed" items at this rate (the company states no cash)."""
NEGATIVE_CAPABLE = {
    "fy_metric",
    "operating_margin",
    "adjusted_margin",
    "free_cash_flow",
    "ebitda",
    "revenue_growth",
    "net_debt",
    "private_revenue",
    "product_share",
    "segment_revenue",
    "largest_product_line",
    "regional_share",
    "regulatory_action",
    "quarter_metric",
}
"""Kinds with a negative form: a fiscal year not yet reported, an undisclosed figure, no fine."""
EITHER_POLARITY = {"regulatory_exposure"}
"""Analyst kinds whose items are "none" (no penalty in the window) at NO_PENALTY_SHARE."""
NO_PENALTY_SHARE = 0.25
REGULATORY_HISTORY = ("regulatory_action", "regulatory_investigation", "regulatory_closure")
"""Events of a company with a regulatory history (the regulatory_history need)."""


@dataclass(frozen=True)
class Kind:
    kind: str
    segment: str
    weight: int
    needs: tuple[str, ...]
    phrasings: tuple[str, ...]
    asks: tuple[Ask, ...] = ()
    """Analyst kinds: the parts every phrasing enumerates, in order."""

    @property
    def analyst(self) -> bool:
        return bool(self.asks)


@cache
def kinds_file() -> dict[str, Any]:
    text = resources.files("synthetic_world").joinpath("question_kinds.yaml").read_text("utf-8")
    return yaml.safe_load(text)


@cache
def question_kinds() -> tuple[dict[str, int], tuple[str, ...], tuple[Kind, ...]]:
    """(segment counts per 126, brief kinds, question kinds) from question_kinds.yaml."""
    data = kinds_file()
    kinds = tuple(
        Kind(
            k["kind"],
            k["segment"],
            int(k["weight"]),
            tuple(k.get("needs") or ()),
            tuple(k["phrasings"]),
            tuple(Ask(**ask) for ask in k.get("asks") or ()),
        )
        for k in data["kinds"]
    )
    missing = {k.kind for k in kinds} - set(PROGRAMS)
    if missing:
        raise RuntimeError(f"question kinds without a key program: {sorted(missing)}")
    for kind in kinds:
        for phrasing in kind.phrasings:
            numbered = sum(f"({i})" in phrasing for i in range(1, len(kind.asks) + 1))
            if kind.asks and numbered != len(kind.asks):
                raise RuntimeError(f"a {kind.kind} phrasing does not enumerate its asks")
    return dict(data["segment_counts"]), tuple(data["brief_kinds"]), kinds


def analyst_share() -> float:
    """Share of each segment's entity items drawn from analyst kinds (question_kinds.yaml)."""
    return float(kinds_file().get("analyst_share", 0.0))


def segment_quota(n: int, counts: dict[str, int]) -> list[str]:
    """``n`` segments in the published proportions (largest remainders)."""
    total = sum(counts.values())
    exact = {s: n * c / total for s, c in counts.items()}
    quota = {s: int(v) for s, v in exact.items()}
    for s in sorted(exact, key=lambda s: (-(exact[s] - quota[s]), s))[: n - sum(quota.values())]:
        quota[s] += 1
    return [s for s in counts for _ in range(quota[s])]


class Drafter:
    """Draws one item at a time: a kind, a company, parameters, an as-of date, a phrasing."""

    def __init__(self, ctx: KeyContext, rng: random.Random, erp_names: dict) -> None:
        self.ctx = ctx
        self.rng = rng
        self.erp_names = erp_names
        """(legal entity, party type, account) -> party name in the ERP."""
        self.index = _company_index(ctx)
        self.first_day = dt.date.fromisoformat(
            ctx.conn.execute("SELECT MIN(published_at) FROM document").fetchone()[0]
        )
        self.notable = [c for c in ctx.companies.values() if c.kind == "notable"]
        self.seen: set[tuple] = set()
        self.traps = TrapFinder(ctx.conn)
        self.burning: dict[tuple[str, dt.date], list[int]] = {}
        self.returning: dict[tuple[str, dt.date], list[int]] = {}

    # -- choices ----------------------------------------------------------------------------------

    def as_of(self) -> dt.date:
        if self.rng.random() >= EARLIER_SHARE:
            return self.ctx.today
        earliest = self.first_day + dt.timedelta(days=500)
        span = (self.ctx.today - earliest).days
        return earliest + dt.timedelta(days=self.rng.randint(0, max(span - 30, 1)))

    def candidates(self, kind: Kind, as_of: dt.date, negative: bool | None = None) -> list[Company]:
        out = []
        for company in self.notable:
            if "listed" in kind.needs and not company.listed:
                continue
            if "private" in kind.needs and company.listed:
                continue
            if "listed_peers" in kind.needs and len(self._peers(company)) < 2:
                continue
            if "with_launch" in kind.needs and not self.ctx.events(
                company.company_id, ("product_launch",), as_of
            ):
                continue
            if "with_funding" in kind.needs and not self.ctx.events(
                company.company_id, ("funding_round",), as_of
            ):
                continue
            if "cash_burn" in kind.needs and not self._burning_years(company, as_of):
                continue
            if "shareholder_returns" in kind.needs and not self._returning_years(company, as_of):
                continue
            if "regulatory_history" in kind.needs and not self.ctx.events(
                company.company_id, REGULATORY_HISTORY, as_of
            ):
                continue
            if "cash_statement" in kind.needs and bool(
                self.ctx.events(company.company_id, ("cash_update",), as_of)
            ) is (negative is True):
                continue  # a "not disclosed" item needs a company that has stated no cash
            out.append(company)
        return out

    def _burning_years(self, c: Company, as_of: dt.date) -> list[int]:
        """The last three fiscal years with cash flows reported by ``as_of`` whose free cash
        flow was negative (the cash runway's years)."""
        key = (c.company_id, as_of)
        if key not in self.burning:
            years = self.ctx.reported_years(c.company_id, as_of, "cash_from_operations")[-3:]
            self.burning[key] = [fy for fy in years if cash_burn(self.ctx, c, fy, as_of)]
        return self.burning[key]

    def _returning_years(self, c: Company, as_of: dt.date) -> list[int]:
        """The last three fiscal years with cash flows reported by ``as_of`` whose free cash
        flow and net income were positive and that returned cash to shareholders."""
        key = (c.company_id, as_of)
        if key not in self.returning:
            years = self.ctx.reported_years(c.company_id, as_of, "dividends_paid")[-3:]
            self.returning[key] = [fy for fy in years if returns_year(self.ctx, c, fy, as_of)]
        return self.returning[key]

    def _peers(self, company: Company) -> list[str]:
        return [
            p
            for p in company.peers
            if self.ctx.companies[p].listed and self.ctx.companies[p].currency == company.currency
        ]

    def draw(
        self, kind: Kind, negative: bool, trapped: bool = True
    ) -> tuple[Key, dict[str, Any], Company, dt.date]:
        """A keyed item of ``kind``; with ``trapped``, only one whose natural search meets a
        hard negative in its top five (synthetic_world/_traps.py)."""
        as_of = self.as_of()
        companies = self.candidates(kind, as_of, negative)
        if not companies:
            raise KeyError_("no company fits")
        if kind.kind == "fy_metric" and not negative and self.rng.random() < VERSIONED_SHARE:
            # Restated and revised figures are the hardest negatives: ask about them often.
            versioned = [c for c in companies if self._versioned_years(c, as_of)]
            companies = versioned or companies
        company = self.rng.choice(companies)
        params = self._params(kind, company, as_of, negative)
        signature = (kind.kind, company.company_id, as_of, repr(sorted(params.items())))
        if signature in self.seen:
            raise KeyError_("drawn before")
        key = PROGRAMS[kind.kind](self.ctx, company, as_of, **params)
        if key.negative != negative and kind.kind not in EITHER_POLARITY:
            raise KeyError_("not the polarity drawn")
        if _returned_nothing(key, params):
            raise KeyError_("no cash returned that year: nothing to ask")
        if trapped and not self.traps.hard_negatives(
            kind.kind, company.company_id, company.name, params, key.gold_documents, as_of
        ):
            raise KeyError_("no hard negative in the natural search")
        self.seen.add(signature)
        return key, params, company, as_of

    def _params(self, kind: Kind, c: Company, as_of: dt.date, negative: bool) -> dict[str, Any]:
        rng, name = self.rng, kind.kind
        years = self.ctx.reported_years(c.company_id, as_of)
        if name in ("latest_fy_metric",):
            return {"metric": rng.choice(METRIC_CHOICES)}
        if name in (
            "latest_quarter_revenue",
            "competitors",
            "latest_launch",
            "latest_funding_round",
            "total_raised",
            "regulatory_action",
        ):
            if name == "regulatory_action":
                has = bool(self.ctx.events(c.company_id, ("regulatory_action",), as_of))
                if has == negative:
                    raise KeyError_("polarity")
            return {}
        if name in ("funding_history", "private_runway"):
            return {}
        if name == "quarter_metric":
            return self._quarter(c, as_of, negative)
        if name == "regulatory_exposure":
            first, last = regulatory_window(as_of)
            if bool(penalties(self.ctx, c, first, last)) == (rng.random() < NO_PENALTY_SHARE):
                raise KeyError_("polarity")
            return {"first_year": first, "last_year": last}
        if name == "cash_runway":
            return {"fy": rng.choice(self._burning_years(c, as_of))}
        if name == "shareholder_returns":
            return {"fy": rng.choice(self._returning_years(c, as_of))}
        if name == "peer_benchmark":
            peers = self._peers(c)
            return {
                "peers": sorted(rng.sample(peers, min(3, len(peers)))),
                "measure": rng.choice(sorted(BENCHMARKS)),
            }
        if name == "valuation_snapshot":
            return {"day": self._trading_day(as_of)}
        if name in ("peer_revenue_ranking", "market_cap_ranking"):
            peers = self._peers(c)
            chosen = sorted(rng.sample(peers, min(3, len(peers))))
            return {"peers": chosen} | (
                {"day": self._trading_day(as_of)} if name == "market_cap_ranking" else {}
            )
        if name in ("peer_margin_comparison", "peer_growth_comparison"):
            return {"peer": rng.choice(self._peers(c))}
        if name == "market_cap":
            return {"day": self._trading_day(as_of)}
        versioned = self._versioned_years(c, as_of) if name == "fy_metric" and not negative else []
        if versioned and rng.random() < 0.7:
            return {"fy": rng.choice(versioned), "metric": rng.choice(VERSIONED_METRICS)}
        fy = self._fiscal_year(c, as_of, years, negative)
        params: dict[str, Any] = {"fy": fy}
        if name == "fy_metric":
            params["metric"] = rng.choice(METRIC_CHOICES)
        elif name == "product_share":
            params["product"] = rng.choice(c.products)
        elif name == "segment_revenue":
            params["segment"] = rng.choice(c.segments)
        elif name == "regional_share":
            params["region"] = rng.choice(c.regions)
        return params

    def _quarter(self, c: Company, as_of: dt.date, negative: bool) -> dict[str, Any]:
        """A quarter_metric item's metric and quarter: one of the last six quarters reported by
        ``as_of``, or (negative) the quarter after the latest one reported."""
        metric = self.rng.choice(QUARTER_METRICS)
        reported = reported_quarters(self.ctx, c.company_id, metric, as_of)
        if not reported:
            raise KeyError_("no quarter reported")
        if negative:
            fy, quarter = int(reported[-1][2:6]), int(reported[-1][-1])
            fy, quarter = (fy + 1, 1) if quarter == 4 else (fy, quarter + 1)
        else:
            chosen = self.rng.choice(reported[-6:])
            fy, quarter = int(chosen[2:6]), int(chosen[-1])
        return {"metric": metric, "fy": fy, "quarter": quarter}

    def _fiscal_year(self, c: Company, as_of: dt.date, years: list[int], negative: bool) -> int:
        if not years:
            raise KeyError_("no reported year")
        if negative:
            return years[-1] + 1
        # Share questions avoid restated years: their segment tables keep the original split.
        restated = set(self._versioned_years(c, as_of, statuses=("restated",)))
        clean = [y for y in years if y not in restated] or years
        return self.rng.choice(clean[-3:])

    def _versioned_years(
        self, c: Company, as_of: dt.date, statuses: tuple[str, ...] = ("restated", "final")
    ) -> list[int]:
        """Fiscal years whose revenue has a later version (restated, or the annual report's
        final figure over the release's) published by ``as_of``."""
        marks = ",".join("?" * len(statuses))
        rows = self.ctx.conn.execute(
            "SELECT DISTINCT period_id FROM fact WHERE company_id = ? AND metric = 'revenue' AND "
            f"version > 1 AND status IN ({marks}) AND published_at <= ? AND period_id NOT LIKE "
            "'%-Q%' ORDER BY period_id",
            (c.company_id, *statuses, as_of.isoformat()),
        ).fetchall()
        return [int(period[2:6]) for (period,) in rows]

    def _trading_day(self, as_of: dt.date) -> dt.date:
        day = as_of - dt.timedelta(days=self.rng.randint(1, 200))
        while day.weekday() >= 5:
            day -= dt.timedelta(days=1)
        return max(day, self.first_day + dt.timedelta(days=30))

    # -- words ------------------------------------------------------------------------------------

    def reference(self, c: Company) -> tuple[str, str]:
        """How the question names the company, and which way (name, short, ticker, typo, erp)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.1 and c.erp:
            le, party_type, account = rng.choice(c.erp)
            if self.erp_names.get((le, party_type, account)) == c.name:
                return f"our {party_type} {account} in {le}", "erp"
        if roll < 0.22 and c.ticker:
            return f"the company with ticker {c.ticker}", "ticker"
        if roll < 0.34:
            typo = _misspell(rng, c.name)
            best = self.index.resolve(typo, limit=2)
            if (
                typo != c.name
                and best
                and best[0][0].company_id == c.company_id
                and (len(best) < 2 or best[0][1] - best[1][1] >= 5)
            ):
                return typo, "misspelled"
        return c.name, "name"

    def question(
        self,
        item_id: str,
        kind: Kind,
        key: Key,
        company: Company,
        as_of: dt.date,
        params: dict[str, Any],
    ) -> Question:
        """The entity item of a key drawn for ``kind``: its wording and its record."""
        query, style = self.words(key, kind, company, as_of, params)
        return _question(self.ctx, item_id, query, TaskType.entity_performance, kind.segment,
                         kind.kind, key, company, as_of, style, params, asks=kind.asks)  # fmt: skip

    def draw_questions(
        self, kind: Kind, negative: bool, count: int, id_prefix: str, tries: int = 3000
    ) -> list[Question]:
        """Up to ``count`` entity items of one kind and polarity (``tries`` draws at most),
        numbered ``{id_prefix}-001`` on."""
        items: list[Question] = []
        for _ in range(tries):
            if len(items) == count:
                break
            try:
                key, params, company, as_of = self.draw(kind, negative)
            except KeyError_:
                continue
            item_id = f"{id_prefix}-{len(items) + 1:03d}"
            items.append(self.question(item_id, kind, key, company, as_of, params))
        return items

    def words(
        self, key: Key, kind: Kind, c: Company, as_of: dt.date, params: dict[str, Any]
    ) -> tuple[str, str]:
        reference, style = self.reference(c)
        names = self.ctx.companies
        peers = [names[p].name for p in params.get("peers", [])]
        fields = {
            "company": reference,
            "metric": _metric_words(params.get("metric", "revenue")),
            "fiscal_year": params.get("fy", ""),
            "as_of": "" if as_of == self.ctx.today else f", as of {long_date(as_of)}",
            "peers": _join(peers),
            "peer": names[params["peer"]].name if "peer" in params else "",
            "prior_year": params["fy"] - 1 if "fy" in params else "",
            "base_year": params["fy"] - 2 if "fy" in params else "",
            "measure": BENCHMARKS[params["measure"]][0] if "measure" in params else "",
            "product": params.get("product", ""),
            "segment": params.get("segment", ""),
            "region": params.get("region", ""),
            "date": long_date(params["day"]) if "day" in params else "",
            "first_year": params.get("first_year", ""),
            "last_year": params.get("last_year", ""),
            "quarter": quarter_text(f"FY{params['fy']}-Q{params['quarter']}")
            if "quarter" in params
            else "",
        }
        phrasing = self.rng.choice(kind.phrasings)
        return phrasing.format(**fields), style


def _returned_nothing(key: Key, params: dict[str, Any]) -> bool:
    """A dividends or repurchases item whose keyed figure is zero (the company returned no cash
    that way that year) asks nothing worth a lookup."""
    metric = params.get("metric")
    return metric in RETURN_METRICS and any(
        fact.field == metric and fact.value == 0 for fact in key.facts
    )


def _metric_words(metric: str) -> str:
    return {
        "cash_from_operations": "operating cash flow",
        "employees": "employee count",
        "depreciation_amortization": "depreciation and amortization",
    }.get(metric, metric.replace("_", " "))


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _misspell(rng: random.Random, name: str) -> str:
    words = name.split()
    i = max(range(len(words)), key=lambda j: len(words[j]))
    word = words[i]
    if len(word) < 5:
        return name
    k = rng.randrange(1, len(word) - 1)
    words[i] = (
        word[:k] + word[k + 1 :]
        if rng.random() < 0.5
        else (word[:k] + word[k + 1] + word[k] + word[k + 2 :])
    )
    return " ".join(words)


def _company_index(ctx: KeyContext) -> CompanyIndex:
    index = CompanyIndex()
    for row in ctx.conn.execute(
        "SELECT company_id, name, short_name, kind, listed, ticker, exchange, industry, sector, "
        "country, city, currency, fiscal_year_end_month, founded_year, ceo FROM company "
        "ORDER BY company_id"
    ):
        index.add(CompanyRow(*row[:4], bool(row[4]), *row[5:15], (), (), ()))
    return index


# -- building datasets ---------------------------------------------------------------------------


def entity_questions(
    ctx: KeyContext, n: int, seed: int, erp_names: dict, share: float | None = None
) -> list[Question]:
    """``n`` entity items in the published segment mix; ``share`` of each segment's items are
    analyst items, at least two per analyst kind where the segment has the items (None:
    question_kinds.yaml's analyst_share; 0: single-fact items only)."""
    counts, _, kinds = question_kinds()
    rng = random.Random(f"entity-questions:{seed}:{ctx.world_id}")
    drafter = Drafter(ctx, rng, erp_names)
    segments = segment_quota(n, counts)
    by_segment = {s: [k for k in kinds if k.segment == s] for s in counts}
    share = analyst_share() if share is None else share
    analyst = _analyst_slots(rng, segments, by_segment, share)
    capable = [
        i
        for i, s in enumerate(segments)
        if i not in analyst and any(k.kind in NEGATIVE_CAPABLE for k in by_segment[s])
    ]
    # exactly a fifth (not a coin per item: a small set would stray from it)
    negative_positions = set(rng.sample(capable, min(len(capable), round(NEGATIVE_SHARE * n))))
    items: list[Question] = []
    for number, segment in enumerate(segments, 1):
        singles = [k for k in by_segment[segment] if not k.analyst]
        negatives = [k for k in singles if k.kind in NEGATIVE_CAPABLE]
        wanted = number - 1 in analyst
        negative = number - 1 in negative_positions
        for attempt in range(400):
            if negative:
                pool = negatives
            elif wanted and attempt < ASSIGNED_TRIES:
                pool = [analyst[number - 1]]  # the slot's own kind first
            elif wanted and attempt < 300:
                pool = [k for k in by_segment[segment] if k.analyst]
            else:
                pool = singles
            kind = rng.choices(pool, [k.weight for k in pool])[0]
            polarity = negative
            if wanted and kind.kind in NEGATIVE_ANALYST:  # some analyst items: "not disclosed"
                polarity = rng.random() < NEGATIVE_ANALYST[kind.kind]
            try:
                # the last tries take an item without a hard negative rather than none
                key, params, company, as_of = drafter.draw(kind, polarity, attempt < TRAP_TRIES)
            except KeyError_:
                continue
            items.append(
                drafter.question(f"wld-ent-{number:03d}", kind, key, company, as_of, params)
            )
            break
        else:
            raise RuntimeError(f"could not draw an item for segment {segment!r}")
    return items


def _analyst_slots(
    rng: random.Random, segments: list[str], by_segment: dict[str, list[Kind]], share: float
) -> dict[int, Kind]:
    """Which item positions are analyst items, and the analyst kind each draws first: ``share``
    of each segment that has analyst kinds (at least MIN_PER_KIND per analyst kind where the
    segment has that many items), at random positions within it. Every analyst kind of a segment
    gets MIN_PER_KIND slots before the weights share out the rest, so a small set holds every
    kind (by weight alone a kind of a 15-item segment could be missing)."""
    slots: dict[int, Kind] = {}
    for segment, kinds in by_segment.items():
        own = [k for k in kinds if k.analyst]
        if not own:
            continue
        positions = [i for i, s in enumerate(segments) if s == segment]
        count = max(round(share * len(positions)), min(len(positions), MIN_PER_KIND * len(own)))
        count = min(count, len(positions)) if share > 0 else 0
        chosen = rng.sample(positions, count)
        each = min(MIN_PER_KIND, count // len(own))
        assigned = [k for k in own for _ in range(each)]
        assigned += rng.choices(own, [k.weight for k in own], k=count - len(assigned))
        rng.shuffle(assigned)
        slots.update(zip(chosen, assigned, strict=True))
    return slots


def _question(
    ctx: KeyContext,
    item_id: str,
    query: str,
    task_type: TaskType,
    segment: str,
    kind: str,
    key: Key,
    company: Company,
    as_of: dt.date,
    style: str,
    params: dict[str, Any],
    record_refs: list[str] | None = None,
    erp_grounded: bool = False,
    asks: tuple[Ask, ...] = (),
) -> Question:
    _check_asks(kind, key, asks)
    tags = build_tags(
        task_type,
        scenario=segment if task_type is TaskType.business_brief else kind,
        period=key.period,
        comparison=key.comparison,
        global_context=key.global_context,
        metrics=key.metrics,
        ground_truth=key.text,
        erp_grounded=erp_grounded,
    )
    return Question(
        id=item_id,
        query=query,
        task_type=task_type,
        segment=segment,
        scenario=segment if task_type is TaskType.business_brief else kind,
        as_of=as_of,
        tags=tags,
        ground_truth=key.text,
        expected=key.facts,
        record_refs=record_refs or [],
        gold_documents=key.gold_documents,
        asks=list(asks),
        metadata={
            "source": "research world",
            "kind": kind,
            "company_id": company.company_id,
            "company_reference": style,
            "negative": key.negative and task_type is TaskType.entity_performance,
            "params": {
                k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in params.items()
            },
        },
    )


def _check_asks(kind: str, key: Key, asks: tuple[Ask, ...]) -> None:
    """An analyst key tags every fact with one of the kind's asks and keys every ask that is no
    opinion; a single-fact key tags none."""
    tagged = {fact.ask for fact in key.facts}
    if not asks:
        if tagged != {None}:
            raise RuntimeError(f"{kind}: a single-fact key tags asks {sorted(map(str, tagged))}")
        return
    keyed = {ask.id for ask in asks if not ask.opinion}
    if tagged != keyed:
        raise RuntimeError(f"{kind}: the key tags asks {sorted(map(str, tagged))}, not {keyed}")


# -- the command ---------------------------------------------------------------------------------


def add_questions_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "questions",
        help="write a keyed entity-performance or business-brief question set",
        description="Draw N research questions on a world with computed keys: expected facts "
        "(unit, scale, period, basis, tolerance) and the gold documents stating each. Briefs "
        "also carry the company's AR/AP facts from the ERP at the same date.",
        epilog="example: python -m synthetic_world questions --db sqlite:///world.db --erp-db "
        "sqlite:///erp.db --task-type entity_performance --n 126 --seed 1 --out entity.yaml",
    )
    parser.add_argument("--db", default="sqlite:///world.db", help="the world (default world.db)")
    parser.add_argument(
        "--erp-db",
        default="sqlite:///erp.db",
        help="the ERP the world was generated from (default sqlite:///erp.db)",
    )
    parser.add_argument(
        "--task-type",
        choices=("entity_performance", "business_brief"),
        default="entity_performance",
        help="which set (default entity_performance)",
    )
    parser.add_argument("--n", type=int, default=None, help="items (default 126 / 30)")
    parser.add_argument("--seed", type=int, default=1, help="draw seed (default 1)")
    parser.add_argument(
        "--analyst-share",
        type=float,
        default=None,
        help="entity sets: share of each segment's items drawn from analyst kinds (several keyed "
        "asks in a business context; above 0, at least two per analyst kind where the segment "
        "has the items); 0 draws single-fact items only (default: question_kinds.yaml's "
        "analyst_share, 0.66)",
    )
    parser.add_argument("--out", type=Path, required=True, help="dataset YAML to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")


def run_questions(args: argparse.Namespace) -> int:
    from erp_mcp._serve_cli import UsageError
    from synthetic_erp._questions import erp_size
    from synthetic_world._briefs import brief_questions, erp_party_names
    from synthetic_world._cli import world_path
    from synthetic_world._generate import WorldError, _open_erp

    task_type = TaskType(args.task_type)
    n = args.n if args.n is not None else (126 if task_type is TaskType.entity_performance else 30)
    if not 1 <= n <= 5000:
        raise UsageError(f"--n must be 1-5000, got {n}")
    if args.analyst_share is not None and not 0 <= args.analyst_share <= 1:
        raise UsageError(f"--analyst-share must be 0-1, got {args.analyst_share}")
    if args.out.exists() and not args.overwrite:
        raise UsageError(f"{args.out} already exists; pass --overwrite to replace it")
    if not args.out.parent.exists():
        raise UsageError(f"the folder {args.out.parent} does not exist")
    conn = connect_read_only(world_path(args.db))
    engine = _open_erp(args.erp_db)
    try:
        ctx = KeyContext(conn)
        erp_meta = dict(engine.connect().execute(_meta_query()).all())
        if erp_meta.get("snapshot_hash") != ctx.meta.get("erp_snapshot_hash"):
            raise WorldError(
                f"the world was generated from ERP snapshot {ctx.meta.get('erp_snapshot_hash')}, "
                f"but {args.erp_db} has {erp_meta.get('snapshot_hash')}; pass the ERP the world "
                "was made from, or regenerate the world from this one"
            )
        names = erp_party_names(engine)
        if task_type is TaskType.entity_performance:
            items = entity_questions(ctx, n, args.seed, names, args.analyst_share)
        else:
            items = brief_questions(ctx, engine, n, args.seed, names)
    finally:
        conn.close()
        engine.dispose()
    dataset = Dataset(
        header=DatasetHeader(
            name=f"world-{task_type.value}",
            description=f"{n} {task_type.value.replace('_', ' ')} questions keyed on research "
            f"world {ctx.world_id} (seed {ctx.meta['seed']}), drawn with seed {args.seed}.",
            erp_snapshot_hash=ctx.meta.get("erp_snapshot_hash"),
            world_snapshot_hash=ctx.meta["snapshot_hash"],
            world_id=ctx.world_id,
            world_seed=int(ctx.meta["seed"]),
            generator_seed=int(ctx.meta["erp_seed"]) if ctx.meta.get("erp_seed") else None,
            **erp_size(erp_meta),
            rubric_version=rubric_version(),
            created_by="python -m synthetic_world questions "
            + " ".join(shlex.quote(a) for a in _command_args(args)),
        ),
        items=items,
    )
    write_dataset(dataset, args.out)
    negatives = sum(
        1
        for q in items
        if q.metadata.get("negative") or any(f.kind == "not_disclosed" for f in q.expected)
    )
    print(
        f"wrote {len(items)} {task_type.value} items to {args.out} ({negatives} not disclosed, "
        f"not yet reported or none; {sum(len(q.gold_documents) for q in items)} gold document "
        "links)"
    )
    return 0


def _command_args(args: argparse.Namespace) -> list[str]:
    return [
        "--db",
        args.db,
        "--erp-db",
        args.erp_db,
        "--task-type",
        args.task_type,
        "--n",
        str(args.n) if args.n is not None else "default",
        "--seed",
        str(args.seed),
        *(["--analyst-share", str(args.analyst_share)] if args.analyst_share is not None else []),
        "--out",
        str(args.out),
    ]


def _meta_query():
    from sqlalchemy import select

    from synthetic_erp import _schema as s

    return select(s.ErpMeta.key, s.ErpMeta.value)


def open_world(path: Path) -> sqlite3.Connection:
    return connect_read_only(path)
