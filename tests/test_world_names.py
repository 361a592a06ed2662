"""Company names of the research world: look-alike names exist only as planted decoys, and the
``company`` tool never ties two companies when the name asked matches one of them exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from rapidfuzz import fuzz

from synthetic_world._runtime import CompanyIndex, CompanyRow
from tests.world_fixtures import shared_folder, small_world, world_rows

pytestmark = pytest.mark.timeout(600)


def _row(company_id: str, name: str, short: str) -> CompanyRow:
    return CompanyRow(
        company_id, name, short, "notable", False, None, None, "Wholesale", "Wholesale & "
        "Distribution", "USA", "Austin", "USD", 12, 2001, "Ana Diaz", (), (), (),
    )  # fmt: skip


@pytest.mark.parametrize(
    "asked", ["Forest Wholesale", "forest wholesale", "Forest Wholesale Inc.", "Forest Whole Sale"]
)
def test_an_exact_name_outranks_a_look_alike(asked: str) -> None:
    index = CompanyIndex()
    index.add(_row("WC0001", "Forest Whole Sale LLC", "Forest Whole Sale"))
    index.add(_row("WC0002", "Forest Wholesale Inc.", "Forest Wholesale"))
    ranked = index.resolve(asked)
    meant = "WC0001" if asked == "Forest Whole Sale" else "WC0002"
    assert ranked[0][0].company_id == meant
    assert ranked[0][1] > ranked[1][1], ranked


def _key(name: str) -> str:
    for suffix in (" Inc.", " Corp.", " Co.", " Group", " LLC", " Ltd", " plc", " AG", " GmbH"):
        name = name.removesuffix(suffix)
    return "".join(ch for ch in name.lower() if ch.isalnum())


@pytest.fixture(scope="module", params=[(42, 0.2), (7, 0.5)], ids=["seed42-small", "seed7"])
def world(request, erp_db_url: str, tmp_path_factory, worker_id: str) -> Path:
    from synthetic_world import generate_world

    seed, scale = request.param
    if (seed, scale) == (42, 0.2):
        return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    path = tmp_path_factory.mktemp("names") / "world.db"
    generate_world(erp_db_url, path, seed=seed, scale=scale)
    return path


def test_look_alike_names_are_only_planted_decoys(world: Path) -> None:
    """Every pair of companies whose names (without legal suffix, letters and digits only) are
    at least 90% alike is a decoy and the company it imitates."""
    rows = world_rows(world, "SELECT company_id, name, kind, decoy_of FROM company")
    decoys = {cid: target for cid, _name, kind, target in rows if kind == "decoy"}
    unplanned = []
    for i, (a, name_a, _, _) in enumerate(rows):
        for b, name_b, _, _ in rows[i + 1 :]:
            planted = decoys.get(a) == b or decoys.get(b) == a
            if not planted and fuzz.ratio(_key(name_a), _key(name_b)) >= 90:
                unplanned.append((name_a, name_b))
    assert unplanned == []
    assert decoys, "the world plants decoys"
