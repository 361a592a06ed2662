"""Keys proven twice (issue 23, item 4): every research key, recomputed from the rendered documents.

For each world (the tests' shared small one; in the slow tier default-scale ones of two seeds)
this takes a world beside the shared seed-42 ERP, keys the 126-item
entity-performance set and the 30-item brief set, parses the documents with the tests' own
parser (tests/world_documents.py: the ``document``, ``company`` and ``world_meta`` tables
only, nothing imported from synthetic_world) and recomputes every item by the written
conventions (tests/world_recompute.py). The ERP's AR/AP facts of the briefs (balance, aging,
overdue, last payment on the brief's day) are recomputed from the raw ledger by another path
than the ERP oracle's (tests/erp_position_recompute.py).

A disagreement that the documents show to be the key's (or the rendering's) fault is a known
defect: it is left out of ``test_keys_match_documents`` by a narrow rule and asserted in its own
``xfail(strict=True)`` test, so fixing the generator turns that test into an unexpected pass.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import Counter
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
import yaml

from ledgerbench_core.dataset import Dataset
from tests.erp_position_recompute import erp_mismatches
from tests.world_documents import World, load_world
from tests.world_fixtures import SMALL_SCALE, shared_folder, small_world
from tests.world_recompute import (
    Mismatch,
    Recompute,
    compare_item,
    fy_key,
    recompute_item,
    reference_problems,
)

pytestmark = pytest.mark.timeout(600)

ENTITY_ITEMS, BRIEF_ITEMS = 126, 30
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
WORLDS = [
    # The default tier recomputes on the small world the other research tests share (built once
    # per test run); the slow tier on default-scale worlds of two seeds.
    pytest.param((42, SMALL_SCALE), id="seed42-small"),
    pytest.param((42, 1.0), marks=pytest.mark.slow, id="seed42"),
    pytest.param((7, 1.0), marks=pytest.mark.slow, id="seed7"),
]


@dataclass
class KeyedWorld:
    seed: int
    world: World
    recompute: Recompute
    entity: Dataset
    briefs: Dataset
    erp: sqlite3.Connection
    results: dict[str, tuple[list[Mismatch], int]]
    """Item id -> (mismatches, facts compared)."""
    draw: object
    """draw(task_type, n, question_seed, folder) -> Dataset: another keyed set of this world."""
    folder: Path
    """This module's own folder for further draws."""
    more_items: list | None = None
    """Items of further draws, made when a test needs a kind the entity set lacks."""

    @property
    def items(self):
        return [*self.entity.items, *self.briefs.items]

    def mismatches(self) -> list[Mismatch]:
        return [m for mismatches, _n in self.results.values() for m in mismatches]


@pytest.fixture(scope="module", params=WORLDS)
def keyed(
    request, erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> KeyedWorld:
    from synthetic_world._cli import main as world_cli

    seed, scale = request.param
    folder = tmp_path_factory.mktemp(f"world{seed}-{scale:g}")
    if scale == SMALL_SCALE:
        world_db = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    else:
        world_db = folder / "world.db"
        generate = ["generate", "--db", f"sqlite:///{world_db}", "--erp-db", erp_db_url]
        assert world_cli([*generate, "--seed", str(seed), "--scale", str(scale), "--quiet"]) == 0
    common = ["--db", f"sqlite:///{world_db}", "--erp-db", erp_db_url]

    def draw(task_type: str, n: int, question_seed: int, out_folder: Path) -> Dataset:
        out = out_folder / f"{task_type}-{question_seed}.yaml"
        args = ["questions", *common, "--task-type", task_type, "--n", str(n)]
        assert world_cli([*args, "--seed", str(question_seed), "--out", str(out)]) == 0
        return Dataset.model_validate(yaml.load(out.read_text(), Loader=YAML_LOADER))

    sets = {
        task_type: draw(task_type, n, 1, folder)
        for task_type, n in (("entity_performance", ENTITY_ITEMS), ("business_brief", BRIEF_ITEMS))
    }
    world = load_world(world_db)
    prices = sqlite3.connect(f"file:{world_db}?mode=ro", uri=True)
    recompute = Recompute(world, prices)
    erp = sqlite3.connect(f"file:{erp_db_url.removeprefix('sqlite:///')}?mode=ro", uri=True)
    entity, briefs = sets["entity_performance"], sets["business_brief"]
    results = {item.id: compare_item(recompute, item) for item in [*entity.items, *briefs.items]}
    yield KeyedWorld(seed, world, recompute, entity, briefs, erp, results, draw, folder)
    prices.close()
    erp.close()


# ---------------------------------------------------------------------------------------------
# Known defects: each a narrow rule over the mismatches, proven by the documents


KNOWN_DEFECTS = {
    "stated_coarser": "Amounts of $1 billion or more are written '$10.3 billion' in funding "
    "documents (round sizes, post-money valuations, and so totals raised), so a key of "
    "10,298.9 million with tolerance 0.05 is stated by no document.",
    "missing_fallback": "A 'not yet reported' item on a figure only annual reports state (total "
    "assets, operating cash flow), asked after the prior year's earnings release but before "
    "its annual report, gives no latest figure, though the conventions say the answer gives "
    "the latest reported one (the year before).",
    "stale_gold_source": "A brief's chief executive is right, but its gold document is a company "
    "profile published before the appointment, naming the predecessor; the appointment "
    "article is not cited.",
}
"""Mismatch causes (set by tests/world_recompute.py by narrow rules) that are the generator's
fault, as the documents show: each is asserted apart in a strict xfail."""

KNOWN_AT: dict[str, set[int]] = {defect: set() for defect in KNOWN_DEFECTS}
"""The world seeds whose keyed sets show each defect today (none: each class stays as a guard
that fails the run if the defect comes back)."""


def _listing(mismatches: list[Mismatch]) -> str:
    return "\n".join(str(m) for m in mismatches)


# ---------------------------------------------------------------------------------------------
# Tests


def test_every_document_parses(keyed: KeyedWorld):
    world = keyed.world
    assert world.problems == [], "\n".join(world.problems[:50])
    types = Counter(doc.source_type for doc in world.docs.values())
    assert len(types) == 8, types
    # each source type yields what it states
    parsed = Counter(f.doc.source_type for f in world.figures)
    for source_type in (
        "annual_report",
        "quarterly_report",
        "earnings_release",
        "data_vendor",
        "company_profile",
        "news",
        "analyst_note",
    ):
        assert parsed[source_type] > 0, source_type
    kinds = Counter(event.kind for event in world.events)
    assert set(kinds) >= {
        "launch",
        "acquisition",
        "ceo_change",
        "fine",
        "rating_change",
        "funding_round",
        "rumour",
        "denial",
        "revenue_announcement",
    }, kinds
    listed = [c for c in world.companies.values() if c.ticker]
    assert {o.company for o in world.overviews} <= {c.company_id for c in listed}


def test_sets_are_full_and_recomputed(keyed: KeyedWorld):
    assert len(keyed.entity.items) == ENTITY_ITEMS
    assert len(keyed.briefs.items) == BRIEF_ITEMS
    kinds = Counter(item.metadata["kind"] for item in keyed.entity.items)
    assert len(kinds) >= 18, kinds
    compared = sum(n for _m, n in keyed.results.values())
    world_facts = sum(
        1
        for item in keyed.items
        for e in item.expected
        if not e.field.startswith(("customer_", "vendor_"))
    )
    not_recomputed = [m for m in keyed.mismatches() if m.what == "recomputation"]
    assert not_recomputed == [], _listing(not_recomputed)
    assert compared >= 0.95 * world_facts, (compared, world_facts)


def test_keys_match_documents(keyed: KeyedWorld):
    """Every key fact of both sets equals what the documents published by the item's as-of date
    say, under the conventions; every gold document is published by then and states the fact
    (or a figure it is computed from). Known defects are asserted apart, below."""
    unexplained = [m for m in keyed.mismatches() if m.cause not in KNOWN_DEFECTS]
    assert unexplained == [], (
        f"{len(unexplained)} key facts disagree with the documents of world seed "
        f"{keyed.seed}:\n{_listing(unexplained)}"
    )


@pytest.mark.parametrize("defect", sorted(KNOWN_DEFECTS))
def test_known_key_defect_is_gone(keyed: KeyedWorld, defect: str, request):
    """Strictly expected to fail at the seeds where the defect shows (KNOWN_AT): once the
    generator is fixed it passes, the strict mark fails the run, and the entry goes."""
    if keyed.seed in KNOWN_AT[defect]:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[defect]))
    found = [m for m in keyed.mismatches() if m.cause == defect]
    assert found == [], f"{KNOWN_DEFECTS[defect]}\n{_listing(found)}"


def test_gold_documents_are_the_items_sources(keyed: KeyedWorld):
    """An item's gold documents are the union of its facts' sources, all in this world."""
    problems = []
    for item in keyed.items:
        union = {url for e in item.expected for url in e.sources}
        if set(item.gold_documents) != union:
            problems.append(
                f"{item.id}: gold_documents {sorted(item.gold_documents)} != "
                f"sources {sorted(union)}"
            )
        for url in item.gold_documents:
            if not url.startswith(f"https://world.ledgerbench.test/{keyed.world.world_id}/"):
                problems.append(f"{item.id}: {url} is not a link of world {keyed.world.world_id}")
    assert problems == [], "\n".join(problems)


def test_questions_name_their_company(keyed: KeyedWorld):
    """By name, ticker, ERP account or a misspelling nearest to the company (not a decoy)."""
    problems = [p for item in keyed.items for p in reference_problems(keyed.world, item, keyed.erp)]
    assert problems == [], "\n".join(problems)
    # and a question about another company, or a brief about another account, is caught
    named = next(i for i in keyed.entity.items if i.metadata["company_reference"] == "name")
    other = next(
        c for c in keyed.world.companies.values() if c.company_id != named.metadata["company_id"]
    )
    renamed = named.model_copy(
        update={"metadata": {**named.metadata, "company_id": other.company_id}}
    )
    assert reference_problems(keyed.world, renamed, keyed.erp)

    def erp_fact(fact) -> bool:
        return bool(fact.subject) and fact.field.startswith(("customer_", "vendor_"))

    brief = next(b for b in keyed.briefs.items if any(erp_fact(e) for e in b.expected))
    index = next(i for i, e in enumerate(brief.expected) if erp_fact(e))
    entity, _, account = brief.expected[index].subject.partition("/")
    stranger = keyed.erp.execute(
        "SELECT account FROM customer WHERE legal_entity = ? AND account != ? LIMIT 1",
        (entity, account),
    ).fetchone()[0]
    moved = _with_fact(
        brief,
        index,
        subject=f"{entity}/{stranger}",
        field=brief.expected[index].field.replace("vendor_", "customer_"),
    )
    assert reference_problems(keyed.world, moved, keyed.erp)


def test_brief_erp_positions_match_the_ledger(keyed: KeyedWorld):
    """Every brief's AR/AP facts agree with the raw ledger on the brief's own day, some briefs
    being as of an earlier day; a wrong last payment, balance or day is caught."""
    earlier = [item for item in keyed.briefs.items if item.as_of < keyed.world.today]
    assert earlier, "no brief as of an earlier day"
    assert all("as it stood on" in item.query for item in earlier)
    problems = [m for item in keyed.briefs.items for m in erp_mismatches(keyed.erp, item)]
    assert problems == [], "\n".join(problems)
    paid = next(
        (item, i)
        for item in keyed.briefs.items
        for i, e in enumerate(item.expected)
        if e.field.endswith("_last_payment_date")
    )
    item, index = paid
    day = dt.date.fromisoformat(item.expected[index].value) - dt.timedelta(days=1)
    assert erp_mismatches(keyed.erp, _with_fact(item, index, value=day.isoformat()))
    balance = next(i for i, e in enumerate(item.expected) if e.field.endswith("_balance"))
    assert erp_mismatches(
        keyed.erp, _with_fact(item, balance, value=item.expected[balance].value + 0.05)
    )
    moved = [
        item.model_copy(update={"as_of": keyed.world.today - dt.timedelta(days=days)})
        for item in earlier
        for days in (0, 60)
    ]
    assert any(erp_mismatches(keyed.erp, item) for item in moved)


def test_negative_items_find_nothing(keyed: KeyedWorld):
    """Items whose key says 'not yet reported', 'not disclosed' or 'none' are a real share, and
    the recomputation, finding nothing, agrees (their mismatches are in the tests above)."""
    negative = [
        item
        for item in keyed.entity.items
        if any(e.kind in ("not_disclosed", "no_records") for e in item.expected)
    ]
    assert 0.1 * ENTITY_ITEMS <= len(negative) <= 0.35 * ENTITY_ITEMS, len(negative)
    disagree = [
        item.id
        for item in negative
        if any(m.cause not in KNOWN_DEFECTS for m in keyed.results[item.id][0])
    ]
    assert disagree == [], disagree


def test_documents_agree_with_each_other(keyed: KeyedWorld):
    """Data-vendor tables and profiles state the latest version of the filings' figures, and
    analyst notes' calendar-year revenue is the sum of the four quarters ending in that year."""
    world, recompute = keyed.world, keyed.recompute
    problems = []
    for figure in world.figures:
        if figure.role in ("vendor", "profile") and figure.metric in (
            "revenue",
            "operating_income",
            "net_income",
            "total_assets",
            "employees",
        ):
            version = recompute.version(
                figure.company, figure.metric, figure.period, figure.published
            )
            if version is None:
                continue  # a private company's employees, or the oldest year's, filed nowhere
            if abs(version.value - figure.value) > figure.half_unit + version.half_unit:
                problems.append(
                    f"{figure.doc.doc_id} states {figure.metric} {figure.period} "
                    f"{figure.value}, the filings {version.value}"
                )
        elif figure.metric == "calendar_revenue":
            total = _calendar_revenue(keyed, figure)
            if total is not None and abs(total - figure.value) > figure.half_unit:
                problems.append(
                    f"{figure.doc.doc_id} states {figure.period} revenue "
                    f"{figure.value}, the quarters add to {total}"
                )
    assert problems == [], "\n".join(problems[:50])


def _calendar_revenue(keyed: KeyedWorld, figure) -> Decimal | None:
    year = int(figure.period.removeprefix("CY"))
    year_end_month = keyed.world.companies[figure.company].fiscal_year_end_month
    total, found = Decimal(0), 0
    for fiscal_year in (year, year + 1):
        for quarter in range(1, 5):
            month, calendar_year = year_end_month + 3 * quarter - 12, fiscal_year
            while month <= 0:
                month, calendar_year = month + 12, calendar_year - 1
            if calendar_year != year:
                continue
            version = keyed.recompute.version(
                figure.company, "revenue", f"FY{fiscal_year}-Q{quarter}", figure.published
            )
            if version is not None:
                total, found = total + version.value, found + 1
    return total if found == 4 else None  # quarters before the world's first filings


def test_revenue_notes_add_up(keyed: KeyedWorld):
    """Product lines and regions add up to consolidated revenue exactly; segments do after the
    intersegment eliminations (docs/conventions.md)."""
    columns: dict[tuple[str, str], dict[str, list]] = {}
    for figure in keyed.world.figures:
        if (
            figure.doc.source_type == "annual_report"
            and figure.metric in ("revenue", "product_revenue", "region_revenue", "segment_revenue")
            and "Note 4." in figure.doc.body
        ):
            columns.setdefault((figure.doc.doc_id, figure.period), {}).setdefault(
                figure.metric, []
            ).append(figure)
    problems = []
    for (doc_id, period), metrics in sorted(columns.items()):
        total = metrics["revenue"][0].value
        for metric in ("product_revenue", "region_revenue", "segment_revenue"):
            parts = sum(f.value for f in metrics[metric])
            if parts != total:
                problems.append(f"{doc_id} {period}: {metric} adds to {parts}, total {total}")
    assert problems == [], f"{len(problems)} columns:\n" + "\n".join(problems[:20])


def test_latest_periods_are_the_latest_published(keyed: KeyedWorld):
    """A 'latest' key names the latest period published by the as-of date: nothing later."""
    problems = []
    for item in keyed.entity.items:
        if item.metadata["kind"] not in ("latest_fy_metric", "latest_quarter_revenue"):
            continue
        for fact in item.expected:
            if fact.period and fact.kind == "amount":
                later = [
                    f
                    for f in keyed.world.figures_of(item.metadata["company_id"], fact.field)
                    if f.published <= item.as_of
                    and f.period.startswith("FY")
                    and ("-Q" in f.period) == ("-Q" in fact.period)
                    and fy_key(f.period) > fy_key(fact.period)
                ]
                if later:
                    problems.append(
                        f"{item.id}: {fact.period}, but {later[0].period} was "
                        f"published {later[0].published}"
                    )
    assert problems == [], "\n".join(problems)


def _first(keyed: KeyedWorld, kind: str | tuple[str, ...], negative: bool | None = False):
    """The first item of the entity set, else of further draws (question seeds 11 to 14), of
    ``kind`` (or one of several) and polarity (None: either): most items are analyst items, so a
    single-fact kind may be missing from one set."""
    kinds = (kind,) if isinstance(kind, str) else kind
    for item, mismatches in _pool(keyed):
        said_none = any(e.kind in ("not_disclosed", "no_records") for e in item.expected)
        if (
            item.metadata["kind"] in kinds
            and not mismatches
            and (negative is None or said_none == negative)
        ):
            return item
    raise LookupError(f"no {kinds} item (negative={negative}) in five draws")


def _pool(keyed: KeyedWorld):
    for item in keyed.entity.items:
        yield item, keyed.results[item.id][0]
    if keyed.more_items is None:
        keyed.more_items = [
            item
            for seed in range(11, 15)
            for item in keyed.draw("entity_performance", ENTITY_ITEMS, seed, keyed.folder).items
        ]
    for item in keyed.more_items:
        yield item, compare_item(keyed.recompute, item)[0]


def _with_fact(item, index: int, **changes):
    expected = list(item.expected)
    expected[index] = expected[index].model_copy(update=changes)
    return item.model_copy(update={"expected": expected})


def test_wrong_keys_are_caught(keyed: KeyedWorld):
    """The comparison fails on keys that are wrong in each way a generator could go wrong, and
    none of these failures passes for a known defect."""
    world = keyed.world
    # an item whose first fact is an amount of one fiscal year with its gold documents (some
    # worlds draw few positive single-fact amounts: analyst items' first facts serve as well)
    amount = _first(
        keyed, ("fy_metric", "free_cash_flow", "net_debt", "leverage_liquidity", "growth_trend")
    )
    fact = amount.expected[0]
    company = amount.metadata["company_id"]
    unrelated = next(
        d
        for d in world.docs.values()
        if d.company == company and d.source_type == "analyst_note" and d.published <= amount.as_of
    )
    dated = next(
        item
        for item in keyed.entity.items
        if item.as_of < world.today and not keyed.results[item.id][0] and item.expected[0].sources
    )
    later = next(
        d
        for d in world.docs.values()
        if d.company == dated.metadata["company_id"] and d.published > dated.as_of
    )
    ranking = _first(keyed, "peer_revenue_ranking")
    growth = _first(keyed, "peer_growth_comparison")
    margin = _first(keyed, "peer_margin_comparison")
    negative = _first(keyed, "fy_metric", negative=True)
    brief = next(item for item in keyed.briefs.items if not keyed.results[item.id][0])
    news = next(i for i, e in enumerate(brief.expected) if e.field == "latest_news_date")
    valued = next(
        item
        for item in keyed.briefs.items
        if any(e.field == "post_money_valuation" for e in item.expected)
    )
    valuation = next(i for i, e in enumerate(valued.expected) if e.field == "post_money_valuation")
    leverage = _first(keyed, "leverage_liquidity")
    multiple = next(i for i, e in enumerate(leverage.expected) if e.kind == "ratio")
    leverage_ratio = leverage.expected[multiple].value
    bridge = _first(keyed, "margin_bridge")
    driver = next(i for i, e in enumerate(bridge.expected) if e.field == "margin_driver")
    reversed_driver = (
        "revenue grew faster than operating expenses"
        if bridge.expected[driver].value.startswith("operating")
        else "operating expenses grew faster than revenue"
    )
    trend = _first(keyed, "growth_trend")
    cagr = next(i for i, e in enumerate(trend.expected) if e.field == "revenue_cagr")
    wrong = {
        "value": _with_fact(amount, 0, value=fact.value + 0.2),
        "period": _with_fact(amount, 0, period=f"FY{int(fact.period[2:]) - 1}"),
        "basis": _with_fact(amount, 0, basis="non-GAAP"),
        "currency": _with_fact(amount, 0, currency="EUR" if fact.currency != "EUR" else "USD"),
        "gold document that states something else": _with_fact(
            amount, 0, sources=[*fact.sources, unrelated.url]
        ),
        "gold document after the as-of date": _with_fact(
            dated, 0, sources=[*dated.expected[0].sources, later.url]
        ),
        "ranking order": _with_fact(ranking, 0, value=list(reversed(ranking.expected[0].value))),
        "comparison": _with_fact(growth, 0, value=not growth.expected[0].value),
        "name": _with_fact(
            margin,
            0,
            value=margin.expected[1].subject
            if margin.expected[0].value != margin.expected[1].subject
            else margin.expected[2].subject,
        ),
        "a figure where none is reported": negative.model_copy(
            update={
                "expected": [
                    negative.expected[0].model_copy(
                        update={"kind": "amount", "value": 1.0, "tolerance": 0.05}
                    )
                ]
            }
        ),
        "older news than the latest": _with_fact(brief, news, value="2000-01-01"),
        "a valuation off by 0.2 million": _with_fact(
            valued, valuation, value=valued.expected[valuation].value + 0.2
        ),
        "a multiple off by 0.05": _with_fact(leverage, multiple, value=leverage_ratio + 0.05),
        "the direction reversed": _with_fact(bridge, driver, value=reversed_driver),
        "a fact under another ask": _with_fact(bridge, driver, ask="margins"),
        "a CAGR off by 0.3 points": _with_fact(trend, cagr, value=trend.expected[cagr].value + 0.3),
    }
    missed = [
        what
        for what, item in wrong.items()
        if not any(m.cause not in KNOWN_DEFECTS for m in compare_item(keyed.recompute, item)[0])
    ]
    assert missed == [], f"wrong keys not caught: {missed}"
    # and the unchanged items do match
    for item in (amount, dated, ranking, growth, margin, negative, brief, leverage, bridge, trend):
        assert compare_item(keyed.recompute, item)[0] == []


def test_versions_follow_the_conventions(keyed: KeyedWorld):
    """A release's preliminary figure counts until the annual report revises it; a report's
    figure counts until a later report restates it; nothing counts before it is published."""
    world, recompute = keyed.world, keyed.recompute
    template = _first(keyed, "fy_metric", negative=None)  # its company and year are replaced

    def answer(company: str, period: str, as_of) -> object:
        item = template.model_copy(
            update={
                "as_of": as_of,
                "metadata": {
                    **template.metadata,
                    "company_id": company,
                    "params": {"fy": int(period[2:]), "metric": "revenue"},
                },
            }
        )
        facts = recompute_item(recompute, item)
        return facts[0].value

    cases = Counter()
    for figure in world.figures:
        if (
            figure.metric != "revenue"
            or "-Q" in figure.period
            or figure.role not in ("preliminary", "restated")
        ):
            continue
        older = [
            f
            for f in world.statements(figure.company, "revenue", figure.period)
            if f.published < figure.published and f.doc.source_type != "data_vendor"
        ]
        if figure.role == "preliminary":
            final = next(
                (
                    f
                    for f in world.statements(figure.company, "revenue", figure.period)
                    if f.role == "current" and f.doc.source_type == "annual_report"
                ),
                None,
            )
            if final is None or final.value == figure.value or cases["revised"] >= 5:
                continue
            cases["revised"] += 1
            day_before = figure.published - dt.timedelta(days=1)
            assert answer(figure.company, figure.period, day_before) == "not yet reported"
            assert answer(figure.company, figure.period, figure.published) == figure.value
            assert (
                answer(figure.company, figure.period, final.published - dt.timedelta(days=1))
                == figure.value
            )
            assert answer(figure.company, figure.period, final.published) == final.value
        elif older and older[-1].value != figure.value and cases["restated"] < 5:
            cases["restated"] += 1
            day_before = figure.published - dt.timedelta(days=1)
            assert answer(figure.company, figure.period, day_before) == older[-1].value
            assert answer(figure.company, figure.period, figure.published) == figure.value
    assert cases["revised"] == 5 and cases["restated"] >= 1, cases


@pytest.fixture(scope="module")
def more_draws(keyed: KeyedWorld, tmp_path_factory: pytest.TempPathFactory) -> list[Mismatch]:
    """The mismatches of four more draws of both sets (question seeds 2 to 5) on the world."""
    folder = tmp_path_factory.mktemp(f"draws{keyed.seed}")
    mismatches = []
    for question_seed in range(2, 6):
        for task_type, n in (("entity_performance", ENTITY_ITEMS), ("business_brief", BRIEF_ITEMS)):
            for item in keyed.draw(task_type, n, question_seed, folder).items:
                found, _compared = compare_item(keyed.recompute, item)
                mismatches += [replace(m, item=f"{m.item}@q{question_seed}") for m in found]
    return mismatches


@pytest.mark.slow
def test_more_draws_match_documents(more_draws: list[Mismatch]):
    """Four more draws of both sets: every disagreement is one of the known defects."""
    unexplained = [m for m in more_draws if m.cause not in KNOWN_DEFECTS]
    assert unexplained == [], _listing(unexplained)


@pytest.mark.slow
def test_more_draws_show_no_known_defect(more_draws: list[Mismatch]):
    assert more_draws == [], f"{len(more_draws)} mismatches, e.g.\n{_listing(more_draws[:20])}"


def test_shareholder_returns_are_keyed_from_the_annual_cash_flow_statement(keyed: KeyedWorld):
    """Dividends paid and repurchases of common stock are read from the annual reports alone;
    every shareholder-returns item of the draws recomputes from them, keys every ask (earnings
    and dividends per share on the year-end share count among them), and a key off by a tenth of
    a point of payout, by more than a cent per share, or with the coverage reversed, is caught."""
    items = [
        (item, mismatches)
        for item, mismatches in _pool(keyed)
        if item.metadata["kind"] == "shareholder_returns"
    ]
    assert len(items) >= 3, f"only {len(items)} shareholder-returns items in five draws"
    assert [m for _, m in items if m] == []
    item = items[0][0]
    fields = {fact.field: index for index, fact in enumerate(item.expected)}
    assert {"dividends_paid", "share_repurchases", "shareholder_returns"} <= set(fields)
    assert {"depreciation_amortization", "capex_to_depreciation"} <= set(fields)
    assert {"cash_returned_to_free_cash_flow", "dividend_payout_ratio"} <= set(fields)
    assert {f.ask for f in item.expected} == {"fcf", "returns", "payout", "per_share", "coverage"}
    payout = item.expected[fields["dividend_payout_ratio"]]
    off = _with_fact(item, fields["dividend_payout_ratio"], value=payout.value + 0.2)
    assert compare_item(keyed.recompute, off)[0]
    # per-share figures are on the year-end share count: a cent and a half off is caught
    for per_share in ("earnings_per_share", "dividends_per_share"):
        fact = item.expected[fields[per_share]]
        off = _with_fact(item, fields[per_share], value=round(fact.value + 0.015, 3))
        assert compare_item(keyed.recompute, off)[0], per_share
    coverage = item.expected[fields["returns_coverage"]].value
    reversed_ = (
        "the returns exceeded free cash flow"
        if coverage == "free cash flow covered the returns"
        else "free cash flow covered the returns"
    )
    assert compare_item(
        keyed.recompute, _with_fact(item, fields["returns_coverage"], value=reversed_)
    )[0]


def test_cash_returned_follows_the_companys_cash_flows(keyed: KeyedWorld):
    """As the documents state them: no dividend in a year whose net income was first reported as
    a loss, no repurchase in a year of negative free cash flow, and depreciation and
    amortization a small positive share of revenue; filings state these rows for fiscal years
    and their quarters (quarterly reports, the annual report's fourth quarter), and a year's four
    quarters add up to it."""
    world, checked, quarterly = keyed.world, 0, 0
    for company in world.companies:
        for dividend in world.figures_of(company, "dividends_paid"):
            assert dividend.doc.source_type in ("annual_report", "quarterly_report")
            if "-Q" in dividend.period:
                continue
            period, day = dividend.period, dividend.published
            # the dividend was set on the year's first reported net income (a later revision or
            # restatement does not reach back to cash already paid)
            net = world.statements(company, "net_income", period)[0]
            cfo = keyed.recompute.version(company, "cash_from_operations", period, day)
            capex = keyed.recompute.version(company, "capital_expenditures", period, day)
            buyback = keyed.recompute.version(company, "share_repurchases", period, day)
            depreciation = keyed.recompute.version(
                company, "depreciation_amortization", period, day
            )
            revenue = keyed.recompute.version(company, "revenue", period, day)
            if net.value <= 0:
                assert dividend.value == 0, (company, period)
            if cfo.value - capex.value <= 0:
                assert buyback.value == 0, (company, period)
            assert 0 < depreciation.value <= revenue.value * Decimal("0.07"), (company, period)
            checked += 1
            for metric in ("depreciation_amortization", "dividends_paid", "share_repurchases"):
                year = keyed.recompute.version(company, metric, period, day)
                parts = [
                    keyed.recompute.version(company, metric, f"{period}-Q{n}", day)
                    for n in range(1, 5)
                ]
                if all(parts):
                    assert sum(p.value for p in parts) == year.value, (company, metric, period)
                    assert all(p.value >= 0 for p in parts), (company, metric, period)
                    quarterly += 1
    assert checked > 100 and quarterly > 100, (checked, quarterly)


def _quarters(year_end: dt.date) -> list[tuple[dt.date, dt.date]]:
    """The first and last days of the four quarters of the fiscal year ending on ``year_end``."""
    starts = []
    for n in range(4):
        month = year_end.month + 1 + 3 * n
        starts.append(dt.date(year_end.year - 1 + (month - 1) // 12, (month - 1) % 12 + 1, 1))
    ends = [later - dt.timedelta(days=1) for later in starts[1:]] + [year_end]
    return list(zip(starts, ends, strict=True))


def test_share_counts_follow_repurchases(keyed: KeyedWorld):
    """From the filings and the prices alone (docs/conventions.md, "Shares outstanding"): the
    shares a quarter's repurchases retired are its amount (a quarterly report's cash-flow row,
    the fourth quarter's in the annual report) over the quarter's average close (to the cent,
    half up), to a tenth of a million, half up; the annual report states the year's sum; and the
    count at the year end is the prior year end's, less them, plus the shares issued under
    employee plans."""
    world, prices, checked, reduced = keyed.world, keyed.recompute.prices, 0, 0
    for company, info in world.companies.items():
        ends = {
            f.period: f.value
            for f in world.figures_of(company, "shares_outstanding")
            if f.doc.source_type == "annual_report"
        }
        for bought in world.figures_of(company, "shares_repurchased"):
            year, day = fy_key(bought.period)[0], bought.published
            issued = keyed.recompute.need(company, "shares_issued", bought.period, day)
            end = next(
                dt.date.fromisoformat(f.period)
                for f in world.figures_of(company, "shares_outstanding")
                if f.doc.doc_id == bought.doc.doc_id
            )
            expected = Decimal(0)
            for n, (first, last) in enumerate(_quarters(end), 1):
                amount = keyed.recompute.need(company, "share_repurchases", f"FY{year}-Q{n}", day)
                closes = [
                    Decimal(row[0])
                    for row in prices.execute(
                        "SELECT close FROM price WHERE ticker = ? AND date BETWEEN ? AND ?",
                        (info.ticker, first.isoformat(), last.isoformat()),
                    )
                ]
                assert closes, (company, year, n)
                average = (sum(closes, Decimal(0)) / len(closes)).quantize(
                    Decimal("0.01"), ROUND_HALF_UP
                )
                expected += (amount.value / average).quantize(Decimal("0.1"), ROUND_HALF_UP)
            assert bought.value == expected, (company, year, bought.value, expected)
            prior_end = [p for p in ends if dt.date.fromisoformat(p) < end]
            if prior_end:
                before = ends[max(prior_end)]
                assert ends[end.isoformat()] == before - bought.value + issued.value, (
                    company,
                    year,
                )
                checked += 1
            reduced += bought.value > issued.value
    assert checked > 20 and reduced > 5, (checked, reduced)


def _drawn(keyed: KeyedWorld, name: str, count: int, negatives: int = 0) -> list:
    """Up to ``count`` items of one kind drawn by the generator's own drafter on the world (a
    kind with a few slots in a set, on the small world, comes up too rarely in five sets), and
    more until ``negatives`` of them are negative (for a kind whose polarity the data decides)."""
    import random

    from synthetic_world._keys import KeyContext, KeyError_
    from synthetic_world._questions import Drafter, question_kinds
    from synthetic_world._runtime import connect_read_only

    conn = connect_read_only(keyed.world.path)
    try:
        drafter = Drafter(KeyContext(conn), random.Random(f"{name}:{keyed.seed}"), {})
        kind = next(k for k in question_kinds()[2] if k.kind == name)
        items = []
        for _ in range(3000):
            if len(items) >= count and sum(i.metadata["negative"] for i in items) >= negatives:
                break
            try:
                key, params, company, as_of = drafter.draw(kind, False)
            except KeyError_:
                continue
            if len(items) >= count and not key.negative:
                continue  # enough positives: drawing on for the negatives
            item_id = f"{name}-{len(items) + 1:03d}"
            items.append(drafter.question(item_id, kind, key, company, as_of, params))
        return items
    finally:
        conn.close()


def test_regulatory_exposure_is_keyed_from_the_news(keyed: KeyedWorld):
    """Fines and settlements are read from the news and the annual reports' legal notes: every
    regulatory-exposure item the generator draws recomputes from them and keys every ask; a
    total off by a tenth of a million, a penalty left out, or the direction reversed is
    caught."""
    drawn = _drawn(keyed, "regulatory_exposure", 12, negatives=2)
    items = [(item, compare_item(keyed.recompute, item)[0]) for item in drawn]
    assert len(items) >= 8, f"only {len(items)} regulatory-exposure items drawn"
    assert [m for _, m in items if m] == []
    assert {item.metadata["negative"] for item, _ in items} == {True, False}
    positive = [item for item, _ in items if not item.metadata["negative"]]
    assert positive, "no regulatory-exposure item with a penalty in its window"
    for item in positive:
        assert {f.ask for f in item.expected} == {"actions", "total", "largest", "trend"}
    item = max(positive, key=lambda i: sum(f.field == "penalty" for f in i.expected))
    fields = {fact.field: index for index, fact in enumerate(item.expected)}
    total = item.expected[fields["total_penalties"]]
    assert total.dealbreaker
    penalties = [f for f in item.expected if f.field == "penalty"]
    assert float(total.value) == pytest.approx(sum(f.value for f in penalties))
    assert compare_item(
        keyed.recompute, _with_fact(item, fields["total_penalties"], value=total.value + 0.1)
    )[0]
    direction = item.expected[fields["penalty_direction"]].value
    reversed_ = "penalties fell" if direction == "penalties rose" else "penalties rose"
    assert compare_item(
        keyed.recompute, _with_fact(item, fields["penalty_direction"], value=reversed_)
    )[0]
    fewer = item.model_copy(
        update={"expected": [f for f in item.expected if f is not penalties[0]]}
    )
    assert compare_item(keyed.recompute, fewer)[0]


def test_the_regulatory_history_matters_against_income(keyed: KeyedWorld):
    """Several regulatory events per company for a share of listed companies: investigations
    opened, closed without a penalty, fines and settlements; penalties are a few percent of the
    year's operating income and some are large (as the news and annual reports state them)."""
    world, recompute = keyed.world, keyed.recompute
    histories, shares = 0, []
    for company, info in world.companies.items():
        opened = world.events_of(company, "investigation")
        if len(opened) >= 2:
            histories += 1
        for penalty in world.events_of(company, "fine", "settlement"):
            year = penalty.date.year + (penalty.date.month > info.fiscal_year_end_month)
            income = recompute.version(company, "operating_income", f"FY{year}", world.today)
            if income is not None and income.value > 0:
                shares.append(penalty.details["amount"] / income.value * 100)
    assert histories >= 5
    assert {"investigation", "closure", "fine", "settlement"} <= {e.kind for e in world.events}
    assert len(shares) >= 10
    assert sorted(shares)[len(shares) // 2] >= 1  # the median penalty is 1% of income or more
    assert max(shares) >= 8


def test_private_runway_is_keyed_from_stated_cash_burn_and_rounds(keyed: KeyedWorld):
    """Private companies' cash and monthly burn are read from their chief executives'
    interviews alone: every private-runway item of the draws recomputes from them and the funding
    announcements, positive and "not disclosed" alike; a runway off by 0.3 months, the gross burn
    keyed for the net one, or an older interview's cash is caught."""
    items = [
        (item, mismatches)
        for item, mismatches in _pool(keyed)
        if item.metadata["kind"] == "private_runway"
    ]
    assert len(items) >= 3, f"only {len(items)} private-runway items in five draws"
    assert [m for _, m in items if m] == []
    positive = [item for item, _ in items if not item.metadata["negative"]]
    assert positive and len(positive) < len(items), "positive and 'not disclosed' items both"
    for item, _ in items:
        asks = {f.ask for f in item.expected}
        assert asks == {"position", "burn", "runway", "funding"}
        breakers = {f.field for f in item.expected if f.dealbreaker}
        negative = {"total_raised", "lead_investors"}
        assert breakers == (negative if item.metadata["negative"] else {"cash_runway_months"})
    item = positive[0]
    fields = {fact.field: index for index, fact in enumerate(item.expected)}
    runway = item.expected[fields["cash_runway_months"]]
    assert runway.unit == "months" and runway.value > 0
    off = _with_fact(item, fields["cash_runway_months"], value=runway.value + 0.3)
    assert compare_item(keyed.recompute, off)[0]
    company, as_of = item.metadata["company_id"], item.as_of
    said = [e for e in keyed.world.events_of(company, "cash_update") if e.date <= as_of]
    latest = said[-1]
    gross = _with_fact(item, fields["monthly_net_burn"], value=float(latest.details["gross_burn"]))
    assert compare_item(keyed.recompute, gross)[0]
    older = [e for e in keyed.world.events_of(company, "cash_update") if e.date < latest.date]
    stale = next((e for e in older if e.details["cash"] != latest.details["cash"]), None)
    if stale is not None:
        wrong = _with_fact(item, fields["cash"], value=float(stale.details["cash"]))
        assert compare_item(keyed.recompute, wrong)[0]


def test_private_cash_statements_carry_their_hard_negatives(keyed: KeyedWorld):
    """Each interview states the cash at a month end before it was published, and a gross burn
    above the net burn; some companies gave several (an older burn figure), and talks of a round
    the company denied follow some of them."""
    world, companies = keyed.world, set()
    for company in world.companies:
        said = world.events_of(company, "cash_update")
        for event in said:
            assert event.details["cash_date"] < event.date
            assert (event.details["cash_date"] + dt.timedelta(days=1)).day == 1
            assert event.details["gross_burn"] > event.details["net_burn"] > 0
            assert not world.companies[company].listed
        if said:
            companies.add(company)
    assert len(companies) >= 5
    several = [c for c in companies if len(world.events_of(c, "cash_update")) > 1]
    denied = [
        c
        for c in companies
        if any(
            e.date > world.events_of(c, "cash_update")[0].date for e in world.events_of(c, "rumour")
        )
    ]
    assert several and denied


def test_briefs_reach_back_a_quarter_or_a_year_with_the_profile_of_their_day(keyed: KeyedWorld):
    """Briefs of five draws go back beyond the latest profile update (a quarter or more), each
    section keyed as it stood on its day: the header cites the profile update standing then (not
    a later one), every world section recomputes from the documents published by then, and the
    ERP facts match the ledger on that day."""
    world = keyed.world
    folder = keyed.folder / "briefs-back"
    folder.mkdir(exist_ok=True)
    items = [*keyed.briefs.items]
    for seed in (2, 3, 4, 5):
        items += keyed.draw("business_brief", 30, seed, folder).items
    back = []
    for item in items:
        updates = sorted(p.doc.published for p in world.profiles_of(item.metadata["company_id"]))
        assert len(updates) == 3, "a profile page and two earlier updates"
        if item.as_of < updates[-1]:
            back.append((item, updates))
    assert len(back) >= 5, f"only {len(back)} briefs before the latest profile update"
    assert any(item.as_of < updates[1] for item, updates in back), "none a year back"
    for item, updates in back:
        assert compare_item(keyed.recompute, item)[0] == []
        assert erp_mismatches(keyed.erp, item) == []
        standing = max(day for day in updates if day <= item.as_of)
        header = [f for f in item.expected if f.field == "headquarters"]
        cited = {world.docs[url.rsplit("/", 1)[1]].published for f in header for url in f.sources}
        assert cited == {standing}, (item.id, cited, standing)
    # citing the latest update (published after the brief's day) for the header is caught
    item, _ = back[0]
    latest = max(world.profiles_of(item.metadata["company_id"]), key=lambda p: p.doc.published)
    index = next(i for i, f in enumerate(item.expected) if f.field == "headquarters")
    assert compare_item(keyed.recompute, _with_fact(item, index, sources=[latest.doc.url]))[0]
