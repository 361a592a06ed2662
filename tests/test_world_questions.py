"""Keyed research question sets: the published mix, negatives, well-formed keys, gold documents,
and the scripted agent answering every item through MCP (judged correct) while ``nothing``
scores 0 on every positive item."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from ledgerbench_core.dataset import Dataset, load_dataset
from tests.world_fixtures import (
    question_set,
    scripted_run,
    shared_folder,
    small_world,
    world_rows,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return shared_folder(tmp_path_factory, worker_id, "world")


@pytest.fixture(scope="module")
def world(erp_db_url: str, folder: Path) -> Path:
    return small_world(erp_db_url, folder)


@pytest.fixture(scope="module")
def entity_set(world: Path, erp_db_url: str, folder: Path) -> Path:
    return question_set(world, erp_db_url, folder, "entity_performance", 126)


@pytest.fixture(scope="module")
def brief_set(world: Path, erp_db_url: str, folder: Path) -> Path:
    return question_set(world, erp_db_url, folder, "business_brief", 30)


@pytest.fixture(scope="module")
def small_entity_set(world: Path, erp_db_url: str, folder: Path) -> Path:
    return question_set(world, erp_db_url, folder, "entity_performance", 50)


def test_entity_items_follow_the_published_segment_mix_with_a_fifth_negative(entity_set: Path):
    dataset = load_dataset(entity_set)
    segments = Counter(item.segment for item in dataset.items)
    assert segments == {
        "Financial Performance & Financial Health": 44,
        "Peers & Competitive Positioning": 44,
        "Product & Service Intelligence": 18,
        "Investor & Funding Landscape": 15,
        "Geographic & Governmental Insights": 5,
    }
    negatives = sum(1 for item in dataset.items if item.metadata["negative"])
    assert 0.15 <= negatives / len(dataset.items) <= 0.27
    assert any(item.as_of != dt.date(2026, 3, 2) for item in dataset.items)
    styles = Counter(item.metadata["company_reference"] for item in dataset.items)
    assert {"name", "ticker", "misspelled"} <= set(styles)
    assert len({item.metadata["kind"] for item in dataset.items}) >= 18


def test_entity_items_are_mostly_analyst_work_with_every_ask_keyed(entity_set: Path):
    """Issue 38's figures for a drawn set: at least 60% analyst items, a median question of at
    least 45 words, at least 60% of items with three or more keyed asks; each analyst item's
    phrasing enumerates its asks, every ask but the opinions has facts, opinions have none."""
    import statistics

    items = load_dataset(entity_set).items
    analyst = [item for item in items if item.asks]
    assert len(analyst) / len(items) >= 0.6
    assert statistics.median(len(item.query.split()) for item in items) >= 45
    keyed = [item for item in items if len({f.ask for f in item.expected if f.ask}) >= 3]
    assert len(keyed) / len(items) >= 0.6
    for item in analyst:
        asks = {ask.id: ask for ask in item.asks}
        tagged = {fact.ask for fact in item.expected}
        assert tagged == {a for a, ask in asks.items() if not ask.opinion}, item.id
        assert all(f"({n})" in item.query for n in range(1, len(item.asks) + 1)), item.id
        assert any(fact.dealbreaker for fact in item.expected), item.id
        assert 2 <= len(item.asks) <= 6


ASKED_FIELDS = {
    "operating_margin": {"operating_margin"},
    "adjusted_margin": {"adjusted_operating_margin"},
    "free_cash_flow": {"free_cash_flow"},
    "ebitda": {"ebitda"},
    "revenue_growth": {"revenue_growth"},
    "net_debt": {"net_debt"},
    "product_share": {"product_share"},
    "regional_share": {"regional_share"},
    "segment_revenue": {"segment_revenue"},
    "largest_product_line": {"largest_product_line", "product_revenue"},
}


def test_not_yet_reported_keys_give_the_asked_measure_for_its_latest_year(entity_set: Path):
    """A "not yet reported" key gives the measure the question asks (not revenue) for an
    earlier fiscal year, as a dealbreaker: "not yet reported" alone is no answer."""
    checked = 0
    for item in load_dataset(entity_set).items:
        asked = [f for f in item.expected if f.value == "not yet reported"]
        figures = [f for f in item.expected if f.kind != "not_disclosed"]
        if not asked or not figures:
            continue
        kind, params = item.metadata["kind"], item.metadata["params"]
        wanted = {params["metric"]} if "metric" in params else ASKED_FIELDS[kind]
        assert {f.field for f in figures} <= wanted, item.id
        assert all(f.dealbreaker for f in figures), item.id
        asked_period = (params["fy"], params.get("quarter", 5))
        assert all(_period_order(f.period) < asked_period for f in figures), item.id
        checked += 1
    assert checked >= 5


def _period_order(period: str) -> tuple[int, int]:
    """'FY2025' -> (2025, 5); 'FY2025-Q3' -> (2025, 3): a year after its quarters."""
    year, _, quarter = period.removeprefix("FY").partition("-Q")
    return int(year), int(quarter or 5)


def test_every_analyst_kind_gets_its_slots_in_a_small_set(world: Path, erp_db_url: str):
    """Each analyst kind of a segment is drawn at least twice where the segment's items allow
    (a 126-item set: Investor & Funding has 15 items for three analyst kinds, Geographic 5 for
    two), while the set stays at least 60% analyst items."""
    from synthetic_world._keys import KeyContext
    from synthetic_world._questions import entity_questions, question_kinds, segment_quota
    from synthetic_world._runtime import connect_read_only

    conn = connect_read_only(world)
    try:
        items = entity_questions(KeyContext(conn), 126, 1, {})
    finally:
        conn.close()
    counts, _, kinds = question_kinds()
    drawn = Counter(item.metadata["kind"] for item in items)
    slots = Counter(segment_quota(126, counts))
    for kind in (k for k in kinds if k.analyst):
        siblings = sum(k.analyst and k.segment == kind.segment for k in kinds)
        wanted = min(2, slots[kind.segment] // siblings)
        assert drawn[kind.kind] >= wanted, (kind.kind, drawn[kind.kind])
    assert sum(bool(item.asks) for item in items) / len(items) >= 0.6


def _drawn_items(
    world: Path, entity_set: Path, wanted, out: Path, seed: int = 11, prefix: str = "drawn"
) -> Path:
    """Items of the given (kind, negative, count) drawn by the generator's own drafter, with ids
    ``{prefix}-{kind}-{pos|neg}-...``, written to ``out/{prefix}.yaml``."""
    import random

    from ledgerbench_core.dataset import write_dataset
    from synthetic_world._keys import KeyContext
    from synthetic_world._questions import Drafter, question_kinds
    from synthetic_world._runtime import connect_read_only

    conn = connect_read_only(world)
    try:
        drafter = Drafter(KeyContext(conn), random.Random(seed), {})
        kinds = {k.kind: k for k in question_kinds()[2]}
        items = [
            item
            for name, negative, count in wanted
            for item in drafter.draw_questions(
                kinds[name], negative, count, f"{prefix}-{name}-{'neg' if negative else 'pos'}"
            )
        ]
    finally:
        conn.close()
    base = load_dataset(entity_set)
    return write_dataset(base.model_copy(update={"items": items}), out / f"{prefix}.yaml")


def _recomputed_mismatches(world: Path, dataset: Path) -> list[str]:
    from tests.world_documents import load_world
    from tests.world_recompute import Recompute, compare_item

    prices = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    try:
        recompute = Recompute(load_world(world), prices)
        items = load_dataset(dataset).items
        return [str(m) for item in items for m in compare_item(recompute, item)[0]]
    finally:
        prices.close()


def test_quarter_figures_and_per_share_figures_are_keyed_recomputed_and_answered(
    world: Path, erp_db_url: str, entity_set: Path, tmp_path: Path
) -> None:
    """A quarter's D&A, dividends or repurchases (quarter_metric) is keyed from its quarterly
    report or the annual report's fourth-quarter table; a quarter not out yet is "not yet
    reported" with the asked metric (never revenue) of the latest quarter out as a dealbreaker.
    shareholder_returns keys earnings and dividends per share on the year-end share count. Every
    item recomputes from the documents, the scripted agent answers each through MCP (judged
    right) and ``nothing`` scores 0 on the positive ones."""
    wanted = [("quarter_metric", False, 14), ("quarter_metric", True, 6)]
    wanted.append(("shareholder_returns", False, 4))
    dataset = _drawn_items(world, entity_set, wanted, tmp_path)
    items = load_dataset(dataset).items
    quarters = [i for i in items if i.metadata["kind"] == "quarter_metric"]
    assert len(quarters) == 20 and len(items) == 24
    metrics = {i.metadata["params"]["metric"] for i in quarters}
    assert metrics == {"depreciation_amortization", "dividends_paid", "share_repurchases"}
    assert any(i.metadata["params"]["quarter"] == 4 for i in quarters if not i.metadata["negative"])
    for item in quarters:
        params = item.metadata["params"]
        asked = f"FY{params['fy']}-Q{params['quarter']}"
        figures = [f for f in item.expected if f.kind != "not_disclosed"]
        assert all(f.field == params["metric"] for f in item.expected), item.id
        if item.metadata["negative"]:
            assert all(f.dealbreaker for f in figures), item.id
            assert all(_period_order(f.period) < _period_order(asked) for f in figures)
        else:
            assert [f.period for f in figures] == [asked], item.id
    for item in (i for i in items if i.metadata["kind"] == "shareholder_returns"):
        per_share = {f.field: f for f in item.expected if f.ask == "per_share"}
        assert set(per_share) == {"earnings_per_share", "dividends_per_share"}, item.id
        assert all(f.scale == "units" and f.tolerance == 0.01 for f in per_share.values())
        # dividends per share over earnings per share is the payout ratio (up to roundings)
        payout = next(f.value for f in item.expected if f.field == "dividend_payout_ratio") / 100
        eps, dps = (per_share[f].value for f in ("earnings_per_share", "dividends_per_share"))
        assert abs(dps - eps * payout) <= 0.006 + 0.0005 * eps, item.id
        assert "(4) " in item.query and "per share" in item.query, item.id
    assert _recomputed_mismatches(world, dataset) == []
    scores = _accuracy(
        _run(dataset, world, erp_db_url, tmp_path / "run", "scripted"), dataset, erp_db_url
    )
    assert len(scores) == len(items) and all(score == 1.0 for score in scores.values()), scores
    nothing = _accuracy(
        _run(dataset, world, erp_db_url, tmp_path / "nothing", "nothing"), dataset, erp_db_url
    )
    positive = [i.id for i in items if not i.metadata["negative"]]
    assert all(nothing[i] == 0.0 for i in positive), nothing


def test_most_items_meet_a_hard_negative_in_their_natural_search(entity_set: Path, world: Path):
    """At least 80% of the items' natural searches (company name and what is asked, by the
    as-of date) show a hard negative in the top five: a prior-year, preliminary, restated,
    segment, non-GAAP, thousands or calendar-year figure, a decoy's page or a funding rumour."""
    from synthetic_world._runtime import connect_read_only
    from synthetic_world._traps import TrapFinder

    items = load_dataset(entity_set).items
    conn = connect_read_only(world)
    try:
        finder = TrapFinder(conn)
        names = dict(conn.execute("SELECT company_id, name FROM company"))
        met = [
            item.id
            for item in items
            if finder.hard_negatives(
                item.metadata["kind"],
                item.metadata["company_id"],
                names[item.metadata["company_id"]],
                item.metadata["params"],
                item.gold_documents,
                item.as_of,
            )
        ]
    finally:
        conn.close()
    assert len(met) / len(items) >= 0.8


def test_every_key_is_well_formed_and_its_gold_documents_state_it_by_the_as_of_date(
    entity_set: Path, brief_set: Path, world: Path
) -> None:
    published = dict(world_rows(world, "SELECT url, published_at FROM document"))
    for path in (entity_set, brief_set):
        dataset = load_dataset(path)
        assert dataset.header.world_snapshot_hash and dataset.header.world_id
        for item in dataset.items:
            assert item.ground_truth and item.expected and item.as_of
            assert "accuracy" in {d.value for d in item.tags}
            for fact in item.expected:
                if fact.kind == "amount" and fact.scale:
                    # per-share figures are in currency units; every other amount in millions
                    per_share = fact.unit == "per share"
                    assert fact.currency in {"USD", "EUR", "GBP"}
                    assert fact.scale == ("units" if per_share else "millions"), fact.field
                    assert fact.period, (item.id, fact.field)
                price_window = "/" in (fact.period or "")  # closes come from the prices tool
                if ((fact.kind == "amount" and fact.scale) or fact.kind == "percent") and not (
                    price_window
                ):
                    assert fact.sources, (item.id, fact.field)
                for url in fact.sources:
                    assert published[url] <= item.as_of.isoformat(), (item.id, url)
            assert set(item.gold_documents) == {u for f in item.expected for u in f.sources}


def test_brief_items_carry_world_sections_and_the_erps_ar_ap(brief_set: Path) -> None:
    dataset = load_dataset(brief_set)
    assert Counter(item.segment for item in dataset.items) == {
        "Business Brief": 6,
        "Company Overview": 6,
        "Corporate Profile": 6,
        "Executive Snapshot": 6,
        "Highlights": 6,
    }
    for item in dataset.items:
        fields = {fact.field for fact in item.expected}
        assert "chief_executive" in fields and "headquarters" in fields
        assert any(f.startswith(("customer_", "vendor_")) for f in fields), item.id
        assert item.record_refs and dataset.header.erp_snapshot_hash


def test_the_same_seed_draws_the_same_set(world: Path, erp_db_url: str, tmp_path: Path):
    from synthetic_world._cli import main

    outputs = []
    for name in ("a.yaml", "b.yaml"):
        out = tmp_path / name
        assert (
            main(
                [
                    "questions",
                    "--db",
                    f"sqlite:///{world}",
                    "--erp-db",
                    erp_db_url,
                    "--n",
                    "40",
                    "--seed",
                    "9",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        outputs.append(load_dataset(out))
    assert outputs[0].items == outputs[1].items
    assert outputs[0].header.world_snapshot_hash == outputs[1].header.world_snapshot_hash


def test_questions_refuse_a_world_made_from_another_erp(world: Path, tmp_path: Path, capsys):
    from synthetic_erp import generate_erp
    from synthetic_world._cli import main

    other = tmp_path / "other.db"
    generate_erp(f"sqlite:///{other}", seed=8, customers=60, vendors=60)
    out = tmp_path / "q.yaml"
    code = main(
        [
            "questions",
            "--db",
            f"sqlite:///{world}",
            "--erp-db",
            f"sqlite:///{other}",
            "--out",
            str(out),
        ]
    )
    assert code == 2 and not out.exists()
    assert "was generated from ERP snapshot" in capsys.readouterr().err


def test_an_analyst_share_outside_0_to_1_is_refused_in_one_line(
    world: Path, erp_db_url: str, tmp_path: Path, capsys
) -> None:
    from synthetic_world._cli import main

    out = tmp_path / "q.yaml"
    args = ["questions", "--db", f"sqlite:///{world}", "--erp-db", erp_db_url, "--out", str(out)]
    assert main([*args, "--analyst-share", "1.5"]) == 2 and not out.exists()
    error = capsys.readouterr().err.strip()
    assert "--analyst-share must be 0-1, got 1.5" in error and len(error.splitlines()) == 1


def test_single_fact_sets_stay_available(world: Path, erp_db_url: str, tmp_path: Path) -> None:
    """``--analyst-share 0`` draws the single-fact kinds only, in the same segment mix."""
    from synthetic_world._cli import main

    out = tmp_path / "single.yaml"
    args = ["questions", "--db", f"sqlite:///{world}", "--erp-db", erp_db_url, "--out", str(out)]
    assert main([*args, "--n", "40", "--analyst-share", "0"]) == 0
    items = load_dataset(out).items
    assert len(items) == 40 and not any(item.asks for item in items)
    assert all(not any(f.ask for f in item.expected) for item in items)


def _run(dataset: Path, world: Path, erp_db_url: str, out: Path, harness: str) -> Path:
    from harnesses import RunConfig
    from harnesses._runner import run

    summary = run(
        RunConfig(
            dataset=dataset,
            harness=harness,
            erp_db=erp_db_url,
            world_db=f"sqlite:///{world}",
            out=out,
            progress=False,
            concurrency=6,
        ),
        log=lambda _m: None,
    )
    assert summary is not None
    return out


def _accuracy(run_dir: Path, dataset: Path, erp_db_url: str) -> dict[str, float]:
    from judge import JudgeRunConfig, run_judge

    run_judge(
        JudgeRunConfig(
            run_dir=run_dir, judge="rules", dataset=str(dataset), erp_db=erp_db_url, progress=False
        )
    )
    scores = {}
    for line in (run_dir / "scores" / "rules.jsonl").read_text().splitlines():
        record = json.loads(line)
        scores[record["question_id"]] = record["dimensions"]["accuracy"]["score"]
    return scores


def test_the_scripted_agent_answers_every_item_through_mcp_and_is_judged_right(
    entity_set: Path, world: Path, erp_db_url: str, folder: Path, tmp_path: Path
) -> None:
    """The entity set's run (made once, copied here before the judge writes into it) and a
    10-item brief set. The slow tier runs the shipped sets whole."""
    briefs = question_set(world, erp_db_url, folder, "business_brief", 10)
    shared = scripted_run(entity_set, world, erp_db_url, folder)
    runs = {
        entity_set: Path(shutil.copytree(shared, tmp_path / "entity")),
        briefs: _run(briefs, world, erp_db_url, tmp_path / "briefs", "scripted"),
    }
    for dataset, run_dir in runs.items():
        records = [json.loads(line) for line in (run_dir / "trajectories.jsonl").open()]
        assert all(r["status"] == "ok" for r in records)
        servers = {c["server"] for r in records for c in r["tool_calls"]}
        assert "world" in servers
        scores = _accuracy(run_dir, dataset, erp_db_url)
        wrong = {qid: score for qid, score in scores.items() if score != 1.0}
        assert not wrong, wrong
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["world_snapshot_hash"] == load_dataset(dataset).header.world_snapshot_hash


def test_the_nothing_agent_scores_zero_on_every_positive_item(
    small_entity_set: Path, world: Path, erp_db_url: str, tmp_path: Path
) -> None:
    run_dir = _run(small_entity_set, world, erp_db_url, tmp_path / "nothing", "nothing")
    scores = _accuracy(run_dir, small_entity_set, erp_db_url)
    positive = {i.id for i in load_dataset(small_entity_set).items if not i.metadata["negative"]}
    assert positive and all(scores[qid] == 0.0 for qid in positive)


@pytest.mark.slow
def test_the_shipped_research_sets_are_answered_right_on_the_default_world(tmp_path: Path):
    """The committed entity and brief sets, keyed on the default world of the default ERP (both
    rebuilt here from their seeds), answered by the scripted agent through MCP, judged right."""
    from harnesses._erp_process import ensure_default_erp
    from harnesses._world_serving import ensure_default_world

    repo = Path(__file__).resolve().parents[1]
    erp = ensure_default_erp()
    for name in ("entity_performance", "business_briefs"):
        dataset = repo / "datasets" / f"{name}.yaml"
        header = load_dataset(dataset).header
        world = ensure_default_world(
            erp, seed=header.world_seed, expected_snapshot=header.world_snapshot_hash
        )
        run_dir = _run(dataset, world, erp, tmp_path / name, "scripted")
        scores = _accuracy(run_dir, dataset, erp)
        wrong = {qid: score for qid, score in scores.items() if score != 1.0}
        assert len(scores) == len(load_dataset(dataset).items) and not wrong, wrong


def test_a_start_refused_by_the_world_leaves_no_run_folder_and_a_run_keeps_its_log(
    entity_set: Path, world: Path, erp_db_url: str, tmp_path: Path
) -> None:
    """The world server logs outside the run folder until the run goes ahead (as the ERP's)."""
    import yaml

    from harnesses import RunConfig
    from harnesses._run_config import RunConfigError
    from harnesses._runner import run

    data = yaml.safe_load(entity_set.read_text())
    data["header"]["world_snapshot_hash"] = "0" * 64
    other = tmp_path / "other-world.yaml"
    other.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "refused"
    config = RunConfig(
        dataset=other, erp_db=erp_db_url, world_db=f"sqlite:///{world}", out=out, progress=False
    )
    with pytest.raises(RunConfigError, match="keyed on world"):
        run(config, log=lambda _m: None)
    assert not out.exists()
    kept = tmp_path / "kept"
    run(config.model_copy(update={"dataset": entity_set, "out": kept, "limit": 2}), log=print)
    assert (kept / "world_mcp.log").exists() and (kept / "erp_mcp.log").exists()


def test_the_runner_says_it_uses_the_default_world_that_exists(
    world: Path, erp_db_url: str, tmp_path: Path
) -> None:
    """A default world already in place is used as it is, and the log says so (not that it is
    generated); nothing is rewritten."""
    import shutil
    import sqlite3

    from harnesses._world_serving import DEFAULT_WORLD_RELATIVE_PATH, ensure_default_world

    default = tmp_path / DEFAULT_WORLD_RELATIVE_PATH
    default.parent.mkdir(parents=True)
    shutil.copyfile(world, default)
    with sqlite3.connect(default) as conn:
        snapshot = dict(conn.execute("SELECT key, value FROM world_meta"))["snapshot_hash"]
    before = default.stat().st_mtime_ns
    lines: list[str] = []
    for expected in (snapshot, None):
        path = ensure_default_world(
            erp_db_url, seed=0, expected_snapshot=expected, log=lines.append, root=tmp_path
        )
        assert path == default
    assert lines == [f"using the default research world {default} (snapshot {snapshot[:12]})"] * 2
    assert default.stat().st_mtime_ns == before


RETURN_METRICS = ("depreciation_amortization", "dividends_paid", "share_repurchases")


def _return_metric_items(world: Path, erp_db_url: str, entity_set: Path):
    """fy_metric items on each annual cash-flow row of listed companies and ebitda items: each
    asked for a reported year, and for the year whose release is out but whose annual report is
    not (so "not yet reported", with the asked figure of the year before)."""
    import random

    from synthetic_world._briefs import erp_party_names
    from synthetic_world._generate import _open_erp
    from synthetic_world._keys import KeyContext
    from synthetic_world._questions import PROGRAMS, Drafter, question_kinds
    from synthetic_world._runtime import connect_read_only

    kinds = {k.kind: k for k in question_kinds()[2]}
    conn = connect_read_only(world)
    ctx = KeyContext(conn)
    engine = _open_erp(erp_db_url)
    drafter = Drafter(ctx, random.Random(5), erp_party_names(engine))
    engine.dispose()
    asks = [("fy_metric", {"metric": m}) for m in RETURN_METRICS] + [("ebitda", {})]
    items = []
    listed = [c for c in drafter.notable if c.listed]
    for company in listed[:12]:
        cid = company.company_id
        years = ctx.reported_years(cid, ctx.today, "depreciation_amortization")
        released = ctx.reported_years(cid, ctx.today, "revenue")
        if len(years) < 2 or released[-1] == years[-1]:
            continue  # wanted: a year whose release is out before its annual report
        fy = released[-1]
        pending = ctx.release_date(cid, f"FY{fy}") + dt.timedelta(days=1)
        for kind, extra in asks:
            for as_of, year in ((ctx.today, years[-1]), (pending, fy)):
                params = {"fy": year, **extra}
                key = PROGRAMS[kind](ctx, company, as_of, **params)
                if any(f.value == 0 for f in key.facts if f.field in RETURN_METRICS):
                    continue
                item_id = f"ret-{len(items) + 1:03d}"
                items.append(drafter.question(item_id, kinds[kind], key, company, as_of, params))
    conn.close()
    header = load_dataset(entity_set).header
    return Dataset(header=header, items=items)


def test_shareholder_return_figures_are_single_facts_keyed_and_answered(
    world: Path, erp_db_url: str, entity_set: Path, tmp_path: Path
) -> None:
    """Depreciation and amortization, dividends paid, share repurchases (fy_metric) and EBITDA
    (operating income + D&A) of a reported year are keyed from the annual report; asked between
    the year's earnings release and its annual report they are "not yet reported", with the asked
    figure (never revenue) of the year before as a dealbreaker; every item recomputes from the
    documents, and the scripted agent answers each through MCP, judged right."""
    from ledgerbench_core.dataset import write_dataset
    from tests.world_documents import load_world
    from tests.world_recompute import Recompute, compare_item

    dataset = _return_metric_items(world, erp_db_url, entity_set)
    pending = [i for i in dataset.items if i.metadata["negative"]]
    assert len(dataset.items) >= 20 and len(pending) >= 6, len(dataset.items)
    for item in pending:
        asked = item.metadata["params"].get("metric", "ebitda")
        earlier = [f for f in item.expected if f.kind != "not_disclosed"]
        assert earlier and all(f.field == asked and f.dealbreaker for f in earlier), item.id
    prices = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    recompute = Recompute(load_world(world), prices)
    mismatches = [m for item in dataset.items for m in compare_item(recompute, item)[0]]
    prices.close()
    assert mismatches == [], [str(m) for m in mismatches[:5]]
    path = tmp_path / "returns.yaml"
    write_dataset(dataset, path)
    scores = _accuracy(
        _run(path, world, erp_db_url, tmp_path / "run", "scripted"), path, erp_db_url
    )
    assert scores and all(score == 1.0 for score in scores.values()), scores


def _regulatory_set(world: Path, entity_set: Path, out: Path) -> Path:
    """Regulatory items drawn by the generator's own drafter: exposure items with and without a
    penalty in their window, and the latest-penalty single-fact kind both ways."""
    wanted = [("regulatory_exposure", False, 10), ("regulatory_action", False, 3)]
    wanted.append(("regulatory_action", True, 3))
    return _drawn_items(world, entity_set, wanted, out, seed=7, prefix="reg")


def test_regulatory_items_are_answered_through_the_world_tools(
    entity_set: Path, world: Path, erp_db_url: str, tmp_path: Path
) -> None:
    """The scripted agent answers every regulatory item (exposure with and without a penalty,
    the latest penalty) from the news it searches; ``nothing`` scores 0 on the positive ones."""
    dataset = _regulatory_set(world, entity_set, tmp_path)
    items = {item.id: item for item in load_dataset(dataset).items}
    exposure = [i for i in items.values() if i.metadata["kind"] == "regulatory_exposure"]
    assert len(exposure) >= 6
    assert {i.metadata["negative"] for i in exposure} == {True, False}
    scripted = _accuracy(
        _run(dataset, world, erp_db_url, tmp_path / "scripted", "scripted"), dataset, erp_db_url
    )
    assert {qid: s for qid, s in scripted.items() if s != 1.0} == {}
    nothing = _accuracy(
        _run(dataset, world, erp_db_url, tmp_path / "nothing", "nothing"), dataset, erp_db_url
    )
    positive = [qid for qid, item in items.items() if not item.metadata["negative"]]
    assert positive and all(nothing[qid] == 0.0 for qid in positive)
