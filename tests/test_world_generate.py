"""The research world's generator: determinism, the fact ledger's invariants, the ERP join."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.world_fixtures import shared_folder, small_world, world_rows


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_same_seed_gives_a_byte_identical_world_and_another_seed_another(
    erp_db_url: str, tmp_path: Path
) -> None:
    from synthetic_world import generate_world

    first = generate_world(erp_db_url, tmp_path / "a.db", seed=5, scale=0.1)
    second = generate_world(erp_db_url, tmp_path / "b.db", seed=5, scale=0.1)
    other = generate_world(erp_db_url, tmp_path / "c.db", seed=6, scale=0.1)
    assert _digest(tmp_path / "a.db") == _digest(tmp_path / "b.db")
    assert first.snapshot_hash == second.snapshot_hash
    assert other.snapshot_hash != first.snapshot_hash and other.world_id != first.world_id
    names = {r[0] for r in world_rows(tmp_path / "a.db", "SELECT name FROM company")}
    other_names = {r[0] for r in world_rows(tmp_path / "c.db", "SELECT name FROM company")}
    assert names != other_names


def test_the_snapshot_hash_covers_the_tables_and_changes_with_any_row(world: Path, tmp_path: Path):
    from synthetic_world._store import snapshot_hash

    copy = tmp_path / "copy.db"
    copy.write_bytes(world.read_bytes())
    conn = sqlite3.connect(copy)
    recorded = conn.execute("SELECT value FROM world_meta WHERE key = 'snapshot_hash'").fetchone()
    assert snapshot_hash(conn) == recorded[0]
    conn.execute("UPDATE document SET body = body || ' ' WHERE rowid = 1")
    assert snapshot_hash(conn) != recorded[0]
    conn.close()


def test_every_fact_is_stated_by_a_document_published_that_day(world: Path) -> None:
    unstated = world_rows(
        world,
        "SELECT f.fact_id FROM fact f JOIN (SELECT company_id, min(fiscal_year) AS first "
        "FROM period GROUP BY company_id) o USING (company_id) "
        "WHERE CAST(substr(f.period_id, 3, 4) AS INTEGER) > o.first AND NOT EXISTS ("
        "SELECT 1 FROM document_fact df JOIN document d USING (doc_id) "
        "WHERE df.fact_id = f.fact_id AND d.published_at = f.published_at)",
    )
    assert unstated == []


def test_nothing_is_published_after_the_worlds_today(world: Path) -> None:
    (today,) = world_rows(world, "SELECT value FROM world_meta WHERE key = 'as_of'")[0]
    for table, column in (
        ("document", "published_at"),
        ("fact", "published_at"),
        ("event", "date"),
        ("price", "date"),
    ):
        (latest,) = world_rows(world, f"SELECT max({column}) FROM {table}")[0]
        assert latest <= today, table


def test_restatements_and_revisions_append_versions_and_keep_the_originals(world: Path) -> None:
    newer = world_rows(
        world,
        "SELECT n.fact_id, n.status, n.supersedes, o.status, n.published_at > o.published_at, "
        "n.value != o.value FROM fact n JOIN fact o ON o.fact_id = n.supersedes",
    )
    assert newer, "the small world has restated or revised figures"
    assert {status for _, status, *_ in newer} <= {"restated", "final", "revised"}
    assert all(later and changed for *_, later, changed in newer)
    restated = [row for row in newer if row[1] == "restated"]
    assert restated and all(row[3] in ("final", "preliminary") for row in restated)
    # the older report still shows the original; the newer one says "restated"
    fact_id = restated[0][0]
    bodies = world_rows(
        world,
        "SELECT d.body FROM document_fact df JOIN document d USING (doc_id) WHERE df.fact_id = ?",
        (fact_id,),
    )
    assert any("(restated)" in body for (body,) in bodies)


def test_fiscal_years_end_in_different_months(world: Path) -> None:
    months = {m for (m,) in world_rows(world, "SELECT fiscal_year_end_month FROM company")}
    assert 12 in months and len(months) >= 3


def test_notable_companies_are_mostly_erp_parties_with_their_accounts(
    world: Path, erp_db_url: str
) -> None:
    notable = world_rows(world, "SELECT company_id, name FROM company WHERE kind = 'notable'")
    linked = world_rows(
        world,
        "SELECT c.name, e.legal_entity, e.party_type, e.account FROM company_erp e "
        "JOIN company c USING (company_id)",
    )
    linked_ids = {r[0] for r in world_rows(world, "SELECT DISTINCT company_id FROM company_erp")}
    assert len(linked_ids) >= 0.8 * len(notable)
    erp = sqlite3.connect(erp_db_url.removeprefix("sqlite:///"))
    for name, le, party_type, account in linked:
        row = erp.execute(
            f"SELECT name FROM {party_type} WHERE legal_entity = ? AND account = ?", (le, account)
        ).fetchone()
        assert row == (name,), (le, party_type, account)
    erp.close()


def test_distressed_companies_pay_badly_in_the_erp_and_lose_money(world: Path) -> None:
    from synthetic_world._universe import DISTRESS_THRESHOLD

    distressed = world_rows(
        world, "SELECT company_id, erp_stress, listed FROM company WHERE distressed = 1"
    )
    assert distressed
    assert all(stress >= DISTRESS_THRESHOLD for _, stress, _ in distressed)
    healthy = [
        s
        for (s,) in world_rows(
            world,
            "SELECT erp_stress FROM company WHERE kind = "
            "'notable' AND distressed = 0 AND erp_stress > 0",
        )
    ]
    assert max(s for _, s, _ in distressed) > sorted(healthy)[len(healthy) // 2]
    for company_id, _, listed in distressed:
        if not listed:
            continue
        losses = world_rows(
            world,
            "SELECT value FROM fact WHERE company_id = ? AND metric = 'operating_income' AND "
            "period_id NOT LIKE '%-Q%' ORDER BY period_id DESC LIMIT 2",
            (company_id,),
        )
        assert all(float(v) < 0 for (v,) in losses), company_id


def test_decoys_carry_near_duplicate_names_of_notable_companies(world: Path) -> None:
    from rapidfuzz import fuzz

    pairs = world_rows(
        world,
        "SELECT d.short_name, n.short_name FROM company d JOIN company n ON n.company_id = "
        "d.decoy_of WHERE d.kind = 'decoy'",
    )
    assert pairs
    assert all(fuzz.WRatio(a, b) >= 85 and a != b for a, b in pairs)


def test_document_links_are_stable_and_carry_the_world_id(world: Path) -> None:
    (world_id,) = world_rows(world, "SELECT value FROM world_meta WHERE key = 'world_id'")[0]
    urls = [u for (u,) in world_rows(world, "SELECT url FROM document LIMIT 50")]
    assert all(u.startswith(f"https://world.ledgerbench.test/{world_id}/docs/d") for u in urls)


def test_documents_state_hard_negatives(world: Path) -> None:
    bodies = "\n".join(b for (b,) in world_rows(world, "SELECT body FROM document"))
    for marker in (
        "Intersegment eliminations",
        "Adjusted operating margin (non-GAAP)",
        "in thousands of",
        "On a calendar-year basis",
        "(preliminary, unaudited)",
        "denied reports of funding talks",
        "(restated)",
    ):
        assert marker in bodies, marker


def test_generate_cli_reports_one_line_and_writes_nothing_on_bad_input(
    erp_db_url: str, tmp_path: Path
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "synthetic_world", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    missing = run(
        "generate",
        "--erp-db",
        f"sqlite:///{tmp_path}/nope.db",
        "--db",
        f"sqlite:///{tmp_path}/w.db",
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "does not exist" in missing.stderr
    assert "synthetic_erp generate" in missing.stderr
    existing = tmp_path / "existing.db"
    existing.write_bytes(b"keep me")
    taken = run("generate", "--erp-db", erp_db_url, "--db", f"sqlite:///{existing}")
    assert taken.returncode == 2 and "--overwrite" in taken.stderr
    assert existing.read_bytes() == b"keep me"
    scale = run(
        "generate", "--erp-db", erp_db_url, "--db", f"sqlite:///{tmp_path}/x.db", "--scale", "9"
    )
    assert scale.returncode == 2 and "--scale" in scale.stderr
    postgres = run("info", "--db", "postgresql://u@h/world")
    assert postgres.returncode == 2 and "one SQLite file" in postgres.stderr
    not_world = run("info", "--db", f"sqlite:///{existing}")
    assert not_world.returncode == 2 and "is not a research world" in not_world.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.db"]
    for result in (missing, taken, scale, postgres, not_world):
        assert "Traceback" not in result.stderr


def test_info_describes_the_world(world: Path, capsys) -> None:
    from synthetic_world._cli import main

    assert main(["info", "--db", f"sqlite:///{world}", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["counts"]["company"] == 100
    assert set(facts["documents_by_type"]) == {
        "annual_report",
        "quarterly_report",
        "earnings_release",
        "news",
        "analyst_note",
        "funding_announcement",
        "company_profile",
        "data_vendor",
    }
    assert dt.date.fromisoformat(facts["as_of"])
