"""Hard negatives an item meets: what its natural search puts in the top five besides its key.

An item's **natural search** is the search an agent would type first: the company's name and the
words of what is asked ("Forest Wholesale operating margin"), limited to documents published by
the item's date. A top-five result is a **hard negative** when it is not one of the item's gold
documents and it states a figure a careless reader would take for the key:

- the asked metric (or a figure an asked measure is computed from) for the same company but
  another period, another version (a preliminary or restated figure), another basis (non-GAAP)
  or another member (a segment figure);
- the company's figures in another scale (a data vendor's table in thousands) or for a calendar
  year (an analyst note, when the fiscal year is not the calendar year);
- a look-alike company's document (its planted decoy);
- a funding rumour or its denial, for funding questions (and an older statement of a private
  company's cash and burn, for its runway);
- another regulatory event of the company, for regulatory questions: an investigation opened or
  closed without a penalty, or a penalty outside the item's window (or not the one keyed).

The question generator keeps a drawn item only when it meets one (``bench/bench_research_traps.py``
prints the exposure per kind).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from functools import cache
from typing import Any

from synthetic_world._search import SearchEngine

TOP = 5
"""How many results of the natural search count."""

WORDS = {
    "fy_metric": "{metric}",
    "latest_fy_metric": "{metric}",
    "operating_margin": "operating margin",
    "adjusted_margin": "adjusted operating margin",
    "free_cash_flow": "operating cash flow capital expenditures",
    "revenue_growth": "revenue growth",
    "latest_quarter_revenue": "quarterly revenue",
    "net_debt": "total debt cash",
    "private_revenue": "revenue",
    "peer_revenue_ranking": "revenue",
    "peer_margin_comparison": "operating margin",
    "peer_growth_comparison": "revenue growth",
    "competitors": "competitors",
    "market_cap_ranking": "market capitalisation",
    "market_cap": "market capitalisation shares outstanding",
    "product_share": "revenue {product}",
    "segment_revenue": "{segment} segment revenue",
    "largest_product_line": "revenue by product line",
    "latest_launch": "launches",
    "latest_funding_round": "funding round",
    "total_raised": "funding round raised",
    "regional_share": "revenue {region}",
    "regulatory_action": "regulator fine",
    "growth_trend": "revenue",
    "margin_bridge": "operating income operating expenses",
    "leverage_liquidity": "total debt cash",
    "cash_runway": "operating activities capital expenditures cash",
    "shareholder_returns": "dividends paid repurchases free cash flow",
    "peer_benchmark": "{measure}",
    "product_mix_shift": "revenue by product line",
    "regional_mix_shift": "revenue by region",
    "funding_history": "funding round valuation",
    "valuation_snapshot": "shares outstanding total debt",
    "ebitda": "operating income depreciation and amortization",
    "regulatory_exposure": "regulator fine settlement penalty",
    # private_runway: a private company's stated cash and burn, and its rounds
    "private_runway": "cash burn funding round",
    # quarter_metric: a quarter's cash-flow row (quarterly reports, the annual Q4 table)
    "quarter_metric": "quarterly {metric}",
}
"""Question kind -> the words of what it asks, with the item's parameters filled in."""

REGULATORY_KINDS = {"regulatory_action", "regulatory_exposure"}
REGULATORY_EVENTS = ("regulatory_action", "regulatory_investigation", "regulatory_closure")
FUNDING_KINDS = {"latest_funding_round", "total_raised", "funding_history", "private_runway"}


def natural_query(kind: str, company_name: str, params: dict[str, Any]) -> str:
    fields = {
        "metric": str(params.get("metric", "revenue")).replace("_", " "),
        "measure": str(params.get("measure", "")).replace("_", " "),
        "product": params.get("product", ""),
        "segment": params.get("segment", ""),
        "region": params.get("region", ""),
    }
    return f"{company_name} {WORDS[kind].format(**fields)}"


class TrapFinder:
    """The natural search of items on one world, and the hard negatives in its top five."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        (documents,) = conn.execute("SELECT count(*) FROM document").fetchone()
        self.engine = SearchEngine(conn, documents)
        self.decoys: dict[str, set[str]] = {}
        for decoy, target in conn.execute(
            "SELECT company_id, decoy_of FROM company WHERE decoy_of IS NOT NULL"
        ):
            self.decoys.setdefault(target, set()).add(decoy)

    def hard_negatives(
        self,
        kind: str,
        company_id: str,
        company_name: str,
        params: dict[str, Any],
        gold_urls: list[str],
        as_of: dt.date,
    ) -> list[str]:
        """Doc ids of the hard negatives in the natural search's top five."""
        query = natural_query(kind, company_name, params)
        hits = self.engine.search(query, TOP, published_before=as_of.isoformat())
        gold = {url.rsplit("/", 1)[-1] for url in gold_urls}
        stated = self._stated(tuple(sorted(gold)), company_id)
        metrics = {row[0] for row in stated}
        out = []
        for hit in hits:
            if hit.doc_id in gold:
                continue
            covered = set(hit.companies.split())
            decoy = bool(covered & self.decoys.get(company_id, set()))
            if decoy or (
                company_id in covered and self._misleads(hit, company_id, kind, metrics, stated)
            ):
                out.append(hit.doc_id)
        return out

    def _misleads(self, hit, company_id: str, kind: str, metrics: set, stated: set) -> bool:
        if kind in REGULATORY_KINDS:
            return self._reports(hit.doc_id, company_id, REGULATORY_EVENTS)
        if hit.source_type in ("data_vendor", "analyst_note") and kind not in FUNDING_KINDS:
            return True  # thousands in place of millions; calendar-year revenue
        if kind in FUNDING_KINDS:
            return bool(
                self.conn.execute(
                    "SELECT 1 FROM document_event de JOIN event e USING (event_id) WHERE "
                    "de.doc_id = ? AND e.company_id = ? AND e.kind IN ('funding_rumour', "
                    "'rumour_denial', 'funding_round', 'cash_update') LIMIT 1",
                    (hit.doc_id, company_id),
                ).fetchone()
            )
        for row in self._doc_facts(hit.doc_id, company_id):
            if row[0] in metrics and row not in stated:
                return True
        return False

    def _reports(self, doc_id: str, company_id: str, kinds: tuple[str, ...]) -> bool:
        """Whether the document reports an event of these kinds about the company."""
        marks = ",".join("?" * len(kinds))
        return bool(
            self.conn.execute(
                "SELECT 1 FROM document_event de JOIN event e USING (event_id) WHERE "
                f"de.doc_id = ? AND e.company_id = ? AND e.kind IN ({marks}) LIMIT 1",
                (doc_id, company_id, *kinds),
            ).fetchone()
        )

    @cache  # noqa: B019  (one finder per world, kept for its life)
    def _stated(self, gold: tuple[str, ...], company_id: str) -> frozenset[tuple]:
        """(metric, member, period, basis, version) of the company's figures the gold state."""
        marks = ",".join("?" * len(gold))
        rows = self.conn.execute(
            "SELECT f.metric, f.member, f.period_id, f.basis, f.version FROM document_fact df "
            f"JOIN fact f USING (fact_id) WHERE df.doc_id IN ({marks}) AND f.company_id = ?",
            (*gold, company_id),
        ).fetchall()
        return frozenset(rows)

    def _doc_facts(self, doc_id: str, company_id: str) -> list[tuple]:
        return self.conn.execute(
            "SELECT f.metric, f.member, f.period_id, f.basis, f.version FROM document_fact df "
            "JOIN fact f USING (fact_id) WHERE df.doc_id = ? AND f.company_id = ?",
            (doc_id, company_id),
        ).fetchall()
