"""Business-brief questions: a company's sections from the world and its AR/AP from the ERP.

Each brief is about a notable company that is a customer or vendor in the ERP, as of the world's
today (which is the ERP's today) or, for a share of them, as of an earlier day (no earlier than
the first kept update of the company's profile page, about a year before its latest). Its key
holds one fact or more per section: header (name, ticker, chief executive, headquarters),
financials (latest fiscal year revenue and operating margin, or the latest funding round of a
private company), strategic moves (the latest deal or launch), lines of business, peers, top
news with its sentiment, and per ERP account of the company its open balance, aging, overdue
amount and last payment on the brief's day, computed by the ERP's own oracle
(``synthetic_erp.scenarios._position``).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from sqlalchemy import Engine, select

from ledgerbench_core.dataset import Ask, ExpectedFact, Question, TaskType
from synthetic_erp import _schema as erp
from synthetic_world._calendar import profile_dates, profile_on
from synthetic_world._documents import long_date
from synthetic_world._keys import (
    Company,
    Key,
    KeyContext,
    KeyError_,
    amount,
    money_text,
    share,
)
from synthetic_world._questions import _question, question_kinds

BRIEF_REQUESTS = {
    "Business Brief": (
        "Prepare a business brief on {company} for our account review: company header, overview, "
        "financials, strategic moves, lines of business, peers, top news with sentiment, and our "
        "AR/AP position with them."
    ),
    "Company Overview": (
        "Give me a company overview of {company}: who they are, leadership, financials, business "
        "lines, competitors, recent news, and what our ERP shows we owe them or they owe us."
    ),
    "Corporate Profile": (
        "Write a corporate profile of {company}, including its latest financials, strategy, "
        "segments, peers and news, plus our receivables or payables with them."
    ),
    "Executive Snapshot": (
        "I meet {company}'s leadership tomorrow. Give me an executive snapshot: header, latest "
        "financials, strategic moves, top news and our open AR/AP with them."
    ),
    "Highlights": (
        "What are the highlights on {company} right now? Key financials, top news with sentiment "
        "and our open balances with them in the ERP."
    ),
}
AS_OF_REQUEST = (
    " Give it as it stood on {day}: what was published by then, and our ERP position that day."
)
"""Appended to the request of a brief asked as of an earlier day."""
EARLIER_SHARE = 0.3
"""Share of briefs asked as of an earlier day than the world's today."""


def erp_party_names(engine: Engine) -> dict[tuple[str, str, str], str]:
    """(legal entity, party type, account) -> name, for every ERP customer and vendor."""
    names = {}
    with engine.connect() as conn:
        for party_type, table in (("customer", erp.Customer), ("vendor", erp.Vendor)):
            t = table.__table__
            for le, account, name in conn.execute(select(t.c.legal_entity, t.c.account, t.c.name)):
                names[(le, party_type, account)] = name
    return names


def _header(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    row = ctx.conn.execute(
        "SELECT ceo, city, ticker, exchange FROM company WHERE company_id = ?", (c.company_id,)
    ).fetchone()
    _, city, ticker, exchange = row
    ceo = _chief_executive_on(ctx, c, as_of, row[0])
    profile = ctx.profile_sources(c.company_id, as_of)
    ceo_sources = profile
    changes = ctx.events(c.company_id, ("executive_change",), as_of)
    profile_day = profile_on(c.company_id, ctx.today, as_of) or as_of
    if changes and changes[-1]["date"] > profile_day.isoformat():
        # The profile predates the latest change of chief executive: the news states the new one.
        ceo_sources = ctx.event_sources([changes[-1]["event_id"]], as_of)
    facts = [
        ExpectedFact(kind="name", field="chief_executive", value=ceo, sources=ceo_sources),
        ExpectedFact(kind="name", field="headquarters", value=city, sources=profile),
    ]
    text = f"{c.name}"
    if ticker:
        facts.insert(0, ExpectedFact(kind="id", field="ticker", value=ticker, sources=profile))
        text += f" ({exchange}: {ticker})"
    return _tagged(
        facts, "header"
    ), f"{text}, headquartered in {city}, led by chief executive {ceo}."


def _chief_executive_on(ctx: KeyContext, c: Company, day: dt.date, current: str) -> str:
    """Who led the company on ``day``: the latest appointment by then, else the one the first
    later appointment replaced, else today's chief executive."""
    changes = ctx.events(c.company_id, ("executive_change",), ctx.today)
    before = [e for e in changes if e["date"] <= day.isoformat()]
    if before:
        return before[-1]["person"]
    return changes[0]["previous_person"] if changes else current


def _overview(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    (industry,) = ctx.conn.execute(
        "SELECT industry FROM company WHERE company_id = ?", (c.company_id,)
    ).fetchone()
    profile = ctx.profile_sources(c.company_id, as_of)
    fact = ExpectedFact(kind="name", field="industry", value=industry, sources=profile)
    return _tagged([fact], "overview"), f"Industry: {industry}."


def _tagged(facts: list[ExpectedFact], section: str) -> list[ExpectedFact]:
    for fact in facts:
        fact.ask = section
    return facts


def _financials(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    if c.listed:
        years = ctx.reported_years(c.company_id, as_of)
        fy = years[-1]
        revenue = ctx.fact(c.company_id, "revenue", f"FY{fy}", as_of)
        income = ctx.fact(c.company_id, "operating_income", f"FY{fy}", as_of)
        margin, value = share(
            "operating_margin",
            income.value,
            revenue.value,
            f"FY{fy}",
            ctx.sources([revenue, income], as_of),
        )
        facts = [
            amount("revenue", revenue.value, c, f"FY{fy}", ctx.sources([revenue], as_of)),
            margin,
        ]
        earlier = []
        for year in (fy - 1, fy - 2):  # the three-year table
            row = ctx.fact(c.company_id, "revenue", f"FY{year}", as_of)
            if row is not None and ctx.sources([row], as_of):
                facts.append(
                    amount("revenue", row.value, c, f"FY{year}", ctx.sources([row], as_of))
                )
                earlier.append(f"fiscal {year} {money_text(row.value, c.currency)}")
        return _tagged(facts, "financials"), (
            f"Fiscal {fy} revenue {money_text(revenue.value, c.currency)}, GAAP "
            f"operating margin {value}%. Earlier revenue: {'; '.join(earlier)}."
        )
    facts, text = [], ""
    years = ctx.reported_years(c.company_id, as_of)
    if years:
        revenue = ctx.fact(c.company_id, "revenue", f"FY{years[-1]}", as_of)
        facts.append(
            amount(
                "revenue",
                revenue.value,
                c,
                f"FY{years[-1]}",
                ctx.sources([revenue], as_of),
                basis=None,
            )
        )
        text = f"Fiscal {years[-1]} revenue {money_text(revenue.value, c.currency)} (announced). "
    else:
        facts.append(ExpectedFact(kind="not_disclosed", field="revenue", value="not disclosed"))
        text = "Revenue is not disclosed. "
    rounds = ctx.events(c.company_id, ("funding_round",), as_of)
    if rounds:
        last = rounds[-1]
        sources = ctx.event_sources([last["event_id"]], as_of)
        facts.append(
            amount(
                "post_money_valuation",
                Decimal(last["post_money"]),
                c,
                last["date"],
                sources,
                basis=None,
            )
        )
        facts.append(
            ExpectedFact(
                kind="name", field="lead_investor", value=last["lead_investor"], sources=sources
            )
        )
        text += (
            f"Latest round: {last['round_name']} led by {last['lead_investor']} at a "
            f"post-money valuation of {money_text(Decimal(last['post_money']), c.currency)}."
        )
    return _tagged(facts, "financials"), text


def _strategy(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    moves = ctx.events(c.company_id, ("acquisition", "product_launch"), as_of)
    if not moves:
        return [], ""
    last = moves[-1]
    sources = ctx.event_sources([last["event_id"]], as_of)
    if last["kind"] == "acquisition":
        target = ctx.companies.get(last["counterparty"])
        name = target.name if target else last["counterparty"]
        fact = ExpectedFact(kind="name", field="latest_acquisition", value=name, sources=sources)
        return (
            _tagged([fact], "strategy"),
            f"Latest strategic move: agreed to acquire {name} "
            f"({long_date(dt.date.fromisoformat(last['date']))}).",
        )
    fact = ExpectedFact(kind="name", field="latest_launch", value=last["product"], sources=sources)
    return (
        _tagged([fact], "strategy"),
        f"Latest strategic move: launched {last['product']} "
        f"({long_date(dt.date.fromisoformat(last['date']))}).",
    )


def _lines_and_peers(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    facts, text = [], ""
    profile = ctx.profile_sources(c.company_id, as_of)
    if c.segments:
        lines = ExpectedFact(
            kind="top_n",
            field="lines_of_business",
            value=c.segments,
            ordered=False,
            sources=profile,
        )
        facts += _tagged([lines], "lines")
        text += f"Segments: {', '.join(c.segments)}. "
    peers = [ctx.companies[p] for p in c.peers]
    if peers:
        names = [p.name for p in peers]
        listing = ExpectedFact(
            kind="top_n", field="peers", value=names, ordered=False, sources=profile
        )
        facts += _tagged([listing, *_peer_figures(ctx, peers, as_of)], "peers")
        text += f"Peers: {', '.join(names)}."
    return facts, text


def _peer_figures(ctx: KeyContext, peers: list[Company], as_of: dt.date) -> list[ExpectedFact]:
    """One comparative figure per listed peer: its latest reported fiscal year's revenue."""
    facts = []
    for peer in peers:
        years = ctx.reported_years(peer.company_id, as_of) if peer.listed else []
        if not years:
            continue
        row = ctx.fact(peer.company_id, "revenue", f"FY{years[-1]}", as_of)
        facts.append(
            amount(
                "revenue",
                row.value,
                peer,
                f"FY{years[-1]}",
                ctx.sources([row], as_of),
                subject=peer.name,
            )
        )
    return facts


def _news(ctx: KeyContext, c: Company, as_of: dt.date) -> tuple[list[ExpectedFact], str]:
    events = [
        e for e in ctx.events(c.company_id, tuple(_NEWS_KINDS), as_of) if e["status"] == "confirmed"
    ]
    if not events:
        return [], ""
    last = events[-1]
    sources = ctx.event_sources([last["event_id"]], as_of, "news")  # the article with a sentiment
    facts = [
        ExpectedFact(kind="date", field="latest_news_date", value=last["date"], sources=sources),
        ExpectedFact(
            kind="text", field="latest_news_sentiment", value=last["sentiment"], sources=sources
        ),
    ]
    day = long_date(dt.date.fromisoformat(last["date"]))
    return _tagged(facts, "news"), f'Top news: "{last["headline"]}" ({day}, {last["sentiment"]}).'


_NEWS_KINDS = (
    "funding_round",
    "acquisition",
    "executive_change",
    "product_launch",
    "regulatory_action",
    "rating_change",
    "restructuring",
    # regulatory history (regulatory_exposure): investigations opened and closed are news too
    "regulatory_investigation",
    "regulatory_closure",
)


def _ar_ap(
    engine: Engine, c: Company, names: dict, day: dt.date
) -> tuple[list[ExpectedFact], list[str], str]:
    """Per ERP account of the company, its position on ``day`` (the ERP's own oracle): open
    balance, aging, overdue amount and last payment."""
    from synthetic_erp.scenarios._base import OracleContext
    from synthetic_erp.scenarios._position import position

    ctx = OracleContext.open(engine)
    facts, refs, texts = [], [], []
    try:
        for le, party_type, account in c.erp:
            if names.get((le, party_type, account)) != c.name:
                continue
            answer = position(ctx, party_type, {"legal_entity": le, "account": account}, day)
            for fact in answer.facts:
                facts.append(
                    fact.model_copy(
                        update={
                            "field": f"{party_type}_{fact.field}",
                            "subject": f"{le}/{account}",
                            "ask": "ar_ap",
                        }
                    )
                )
            refs += answer.refs
            texts.append(("Customer " if party_type == "customer" else "Vendor ") + answer.text)
    finally:
        ctx.close()
    return facts, refs, " ".join(texts)


def brief_key(
    ctx: KeyContext, engine: Engine, c: Company, names: dict, as_of: dt.date
) -> tuple[Key, list[str]]:
    parts = [
        _header(ctx, c, as_of),
        _overview(ctx, c, as_of),
        _financials(ctx, c, as_of),
        _strategy(ctx, c, as_of),
        _lines_and_peers(ctx, c, as_of),
        _news(ctx, c, as_of),
    ]
    facts = [f for part, _ in parts for f in part]
    texts = [text for _, text in parts if text]
    erp_facts, refs, erp_text = _ar_ap(engine, c, names, as_of)
    if not erp_facts:
        raise KeyError_("no ERP account of that name")
    facts += erp_facts
    texts.append("In our ERP: " + erp_text)
    return Key(" ".join(texts), facts, period="latest reported period"), refs


def brief_questions(
    ctx: KeyContext, engine: Engine, n: int, seed: int, names: dict
) -> list[Question]:
    _, kinds, _ = question_kinds()
    rng = random.Random(f"brief-questions:{seed}:{ctx.world_id}")
    candidates = sorted(
        (c for c in ctx.companies.values() if c.kind == "notable" and c.erp),
        key=lambda c: c.company_id,
    )
    rng.shuffle(candidates)
    # Companies with several ERP accounts (a customer and a vendor, or one in two legal
    # entities) first: a brief's AR/AP section covers every account of the name.
    candidates.sort(key=lambda c: len({(le, kind) for le, kind, _ in c.erp}) > 1)
    if len(candidates) < n:
        raise KeyError_(f"the world has {len(candidates)} ERP-linked companies, fewer than {n}")
    items = []
    settled: list[Company] = []
    """Companies whose every account is settled (a zero balance): drawn only when no other is
    left, since an AR/AP section of zeros asks little."""
    settled_ok = False
    for number in range(n):
        kind = kinds[number % len(kinds)]
        while True:
            if not candidates and settled:
                candidates, settled, settled_ok = settled, [], True
            if not candidates:
                raise KeyError_("no company left for a brief")
            company = candidates.pop()
            as_of = _brief_day(ctx, company, rng)
            try:
                key, refs = brief_key(ctx, engine, company, names, as_of)
            except KeyError_:
                continue
            if not settled_ok and not _open_balance(key):
                settled.append(company)
                continue
            break
        query = BRIEF_REQUESTS[kind].format(company=company.name)
        if as_of != ctx.today:
            query += AS_OF_REQUEST.format(day=long_date(as_of))
        items.append(
            _question(
                ctx,
                f"wld-brf-{number + 1:03d}",
                query,
                TaskType.business_brief,
                kind,
                "brief",
                key,
                company,
                as_of,
                "name",
                {},
                record_refs=refs,
                erp_grounded=True,
                asks=_sections(key),
            )
        )
    return items


def _brief_day(ctx: KeyContext, c: Company, rng: random.Random) -> dt.date:
    """The world's today, or for a share of briefs an earlier day on which the company's profile
    page (the source of its header, lines of business and peers) was already published: its
    first update kept, about a year before its latest."""
    if rng.random() >= EARLIER_SHARE:
        return ctx.today
    first = profile_dates(c.company_id, ctx.today)[0]
    last = ctx.today - dt.timedelta(days=3)
    if first >= last:
        return ctx.today
    return first + dt.timedelta(days=rng.randint(0, (last - first).days))


def _open_balance(key: Key) -> bool:
    return any(
        fact.ask == "ar_ap" and fact.field.endswith("_balance") and fact.value not in (0, 0.0)
        for fact in key.facts
    )


BRIEF_SECTIONS = {
    "header": "company header: ticker, headquarters, chief executive",
    "overview": "company overview: industry",
    "financials": "financials: latest fiscal year revenue and operating margin, revenue of the "
    "two years before (a private company: announced revenue and latest funding)",
    "strategy": "strategic moves: the latest acquisition or launch",
    "lines": "lines of business",
    "peers": "peers, with one comparative figure each (latest fiscal year revenue)",
    "news": "top news with its date and sentiment",
    "ar_ap": "our AR/AP position on the brief's day: open balance, aging, overdue amount and last "
    "payment of every account in the ERP",
}
"""A brief's sections, each an ask of its key (a section with nothing to key is left out)."""


def _sections(key: Key) -> tuple[Ask, ...]:
    present = {fact.ask for fact in key.facts}
    return tuple(Ask(id=s, text=text) for s, text in BRIEF_SECTIONS.items() if s in present)
