"""World search has a bounded cost: common words are ranked among the newest documents only, and
queries with a rarer word are ranked by bm25 over their rarer words, among every match.

The cost figures themselves (each query shape against the typical query, at the default world
and at a world four times larger) come from ``bench/bench_search_bound.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from synthetic_world._search import (
    BM25_WEIGHTS,
    MIN_WINDOW,
    SCORED_CAP,
    SearchEngine,
    query_words,
)
from tests.world_fixtures import shared_folder, small_world


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


@pytest.fixture
def engine(world: Path):
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    (documents,) = conn.execute("SELECT count(*) FROM document").fetchone()
    yield SearchEngine(conn, documents)
    conn.close()


def _documents_with(conn: sqlite3.Connection, word: str) -> int:
    (count,) = conn.execute(
        "SELECT count(*) FROM document_fts WHERE document_fts MATCH ?", [f'"{word}"']
    ).fetchone()
    return count


def _common_words(conn: sqlite3.Connection, how_many: int) -> list[str]:
    candidates = "million fiscal year quarter revenue net operating share results company income"
    common = [w for w in candidates.split() if _documents_with(conn, w) > SCORED_CAP]
    assert len(common) >= how_many, f"the test world has too few common words: {common}"
    return common[:how_many]


def _exact_and(conn: sqlite3.Connection, words: list[str], k: int) -> list[int]:
    """bm25 over every document holding all the words: the ranking before the bound."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    match = " AND ".join(f'"{w}"' for w in words)
    rows = conn.execute(
        f"SELECT rowid FROM document_fts WHERE document_fts MATCH ? "
        f"ORDER BY bm25(document_fts, {weights}), rowid LIMIT ?",
        [match, k],
    ).fetchall()
    return [rowid for (rowid,) in rows]


def _exact_rare(conn: sqlite3.Connection, words: list[str], k: int) -> list[int]:
    """bm25 of the words in at most SCORED_CAP documents, over every document holding all the
    words (their own IDF: the ranking the bound keeps)."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    rare = [w for w in words if _documents_with(conn, w) <= SCORED_CAP]
    rows = conn.execute(
        f"SELECT rowid FROM document_fts WHERE document_fts MATCH ? AND rowid IN "
        "(SELECT rowid FROM document_fts WHERE document_fts MATCH ?) "
        f"ORDER BY bm25(document_fts, {weights}), rowid LIMIT ?",
        [" AND ".join(f'"{w}"' for w in rare), " AND ".join(f'"{w}"' for w in words), k],
    ).fetchall()
    return [rowid for (rowid,) in rows]


def test_a_query_with_a_rarer_word_is_ranked_by_its_rarer_words(engine: SearchEngine) -> None:
    conn = engine.conn
    names = [name for (name,) in conn.execute("SELECT name FROM company ORDER BY company_id")]
    compared = same_as_every_word = 0
    for name in names[:40]:
        words = query_words(f"{name} revenue")
        if len(_exact_and(conn, words, 10)) < 10:
            continue  # the OR fills the rest: compared in the bench's overlap figure
        hits = [hit.rowid for hit in engine.search(f"{name} revenue", 10)]
        assert hits == _exact_rare(conn, words, 10), name
        same_as_every_word += len(set(hits) & set(_exact_and(conn, words, 10)))
        compared += 1
    assert compared >= 5
    assert same_as_every_word >= 0.9 * 10 * compared  # nearly the unbounded bm25's top 10


def test_a_company_filter_of_common_words_ranks_that_companys_documents(
    engine: SearchEngine,
) -> None:
    """Among the company's newest documents, not the world's: a company that no recent
    document names still gets its documents."""
    conn = engine.conn
    words = _common_words(conn, 2)
    window = max(MIN_WINDOW, SCORED_CAP // len(words))
    every_word = " AND ".join(f'"{w}"' for w in words)
    checked = 0
    for (company_id,) in conn.execute("SELECT company_id FROM company ORDER BY company_id"):
        company = f'companies : "{company_id.lower()}"'
        (newest_of_company,) = conn.execute(
            "SELECT min(rowid) FROM (SELECT rowid FROM document_fts WHERE document_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?)",
            [company, window],
        ).fetchone()
        if newest_of_company is None:
            continue
        expected = conn.execute(
            "SELECT count(*) FROM document_fts WHERE document_fts MATCH ? AND rowid >= ?",
            [f"{company} AND {every_word}", newest_of_company],
        ).fetchone()[0]
        hits = engine.search(" ".join(words), 10, company_id=company_id)
        assert len(hits) == min(10, expected), company_id
        for hit in hits:
            held = conn.execute(
                "SELECT count(*) FROM document_fts WHERE document_fts MATCH ? AND rowid = ?",
                [f"{company} AND {every_word}", hit.rowid],
            ).fetchone()[0]
            assert held == 1 and hit.rowid >= newest_of_company, (company_id, hit.doc_id)
        checked += bool(hits)
    assert checked >= 3


def test_common_words_only_are_ranked_among_the_newest(engine: SearchEngine) -> None:
    conn = engine.conn
    (newest,) = conn.execute("SELECT max(rowid) FROM document").fetchone()
    for words in ([_common_words(conn, 1)[0]], _common_words(conn, 3)):
        window = max(MIN_WINDOW, SCORED_CAP // len(words))
        hits = engine.search(" ".join(words), 10)
        assert hits, words
        for hit in hits:
            assert hit.rowid > newest - window, "ranked outside the newest documents"
            held = conn.execute(
                "SELECT count(*) FROM document_fts WHERE document_fts MATCH ? AND rowid = ?",
                [" AND ".join(f'"{w}"' for w in words), hit.rowid],
            ).fetchone()[0]
            assert held == 1, f"{hit.doc_id} lacks one of {words}"
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert engine.search(" ".join(words), 10) == hits, "the same query, the same list"


def test_common_words_respect_the_filters(engine: SearchEngine) -> None:
    conn = engine.conn
    words = " ".join(_common_words(conn, 2))
    (middle,) = conn.execute(
        "SELECT published_at FROM document ORDER BY rowid LIMIT 1 OFFSET "
        "(SELECT count(*) / 2 FROM document)"
    ).fetchone()
    old = engine.search(words, 10, published_before=middle)
    assert old and all(hit.published_at <= middle for hit in old)
    typed = engine.search(words, 10, source_type=old[0].source_type)
    assert typed and all(hit.source_type == old[0].source_type for hit in typed)
    assert engine.search(words, 10, published_before="1900-01-01") == []


def test_twenty_four_common_words_still_find_documents(engine: SearchEngine) -> None:
    words = _common_words(engine.conn, 4)
    hits = engine.search(" ".join(words * 6 + ["operating", "results"] * 4), 10)
    assert len(hits) == 10  # an OR of the newest documents' words fills what the AND misses
