"""BM25 search over the world's documents (SQLite FTS5), with stable rankings.

A query is cut into words, stop words dropped, and run first as an AND of all its words (precise
and fast); when that finds fewer than ``k`` documents, an OR of its rarer words fills the rest
(words found in most documents make an OR slow and rank nothing). Ties break on the document id,
so the same query always returns the same list. Filters (company, source type, publication
dates) are SQL conditions on the matches. ``bench/bench_world.py`` compares this engine with
``bm25s`` on the same queries.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass

_STOP_WORDS = (
    "a about above after again against all am an and any are as at be been before being "
    "below between both but by can could did do does doing down during each few for from "
    "further had has have having he her here hers how i if in into is it its itself just me "
    "more most my no nor not now of off on once only or other our out over own same she "
    "should so some such than that the their them then there these they this those through "
    "to too under until up very was we were what when where which while who whom why will "
    "with would you your please tell give show find report list much many s "
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""Words no query is about (dropped before matching)."""
BM25_WEIGHTS = (4.0, 1.0, 0.0)
"""Column weights: title, body, company ids (a filter column, not ranked)."""
SNIPPET_TOKENS = 32
MAX_QUERY_WORDS = 24
RARE_SHARE = 0.08
"""Words in more than this share of documents are left out of the OR fallback."""

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Hit:
    rowid: int
    doc_id: str
    title: str
    source: str
    source_type: str
    published_at: str
    companies: str
    snippet: str
    score: float


def _fold(text: str) -> str:
    """Lower case without diacritics, as the index's ``unicode61`` tokenizer folds words
    ("Trüb" -> "trub")."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def query_words(query: str) -> list[str]:
    """The searchable words of ``query``, in order, without stop words or repeats."""
    words: dict[str, None] = {}
    for word in _WORD.findall(_fold(query)):
        if word not in STOP_WORDS and (len(word) > 1 or word.isdigit()):
            words.setdefault(word, None)
    return list(words)[:MAX_QUERY_WORDS]


def _quoted(words: list[str]) -> list[str]:
    return [f'"{w}"' for w in words]


class SearchEngine:
    """Search over one open world database (one engine per connection)."""

    def __init__(self, conn: sqlite3.Connection, documents: int) -> None:
        self.conn = conn
        self.documents = max(documents, 1)
        self._frequency: OrderedDict[str, int] = OrderedDict()

    def frequency(self, word: str) -> int:
        """How many documents contain ``word`` (after stemming), remembered per engine."""
        if word in self._frequency:
            self._frequency.move_to_end(word)
            return self._frequency[word]
        (count,) = self.conn.execute(
            "SELECT count(*) FROM document_fts WHERE document_fts MATCH ?", (f'"{word}"',)
        ).fetchone()
        self._frequency[word] = count
        if len(self._frequency) > 20_000:
            self._frequency.popitem(last=False)
        return count

    def search(
        self,
        query: str,
        k: int,
        *,
        company_id: str | None = None,
        source_type: str | None = None,
        published_after: str | None = None,
        published_before: str | None = None,
    ) -> list[Hit]:
        words = query_words(query)
        if not words:
            return []
        conditions, params = [], []
        if source_type:
            conditions.append("d.source_type = ?")
            params.append(source_type)
        if published_after:
            conditions.append("d.published_at >= ?")
            params.append(published_after)
        if published_before:
            conditions.append("d.published_at <= ?")
            params.append(published_before)
        scope = f'companies : "{company_id.lower()}" AND ' if company_id else ""
        hits = self._run(scope + "(" + " AND ".join(_quoted(words)) + ")", k, conditions, params)
        if len(hits) < k and len(words) > 1:
            rare = [w for w in words if self.frequency(w) <= RARE_SHARE * self.documents]
            chosen = rare or words
            seen = {h.rowid for h in hits}
            more = self._run(
                scope + "(" + " OR ".join(_quoted(chosen)) + ")",
                k + len(hits),
                conditions,
                params,
            )
            hits += [h for h in more if h.rowid not in seen][: k - len(hits)]
        return hits

    def _run(self, match: str, k: int, conditions: list[str], params: list) -> list[Hit]:
        """The top ``k`` of ``match``: ranked first (bm25 only, joined to the document table only
        when a filter needs it), then the snippets of just those ``k`` (a snippet costs more than
        a score, and SQLite would compute one for every match before sorting)."""
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        if conditions:
            where = "".join(f" AND {c}" for c in conditions)
            ranked = self.conn.execute(
                f"SELECT f.rowid, bm25(document_fts, {weights}) AS score FROM document_fts f "
                f"JOIN document d ON d.rowid = f.rowid WHERE document_fts MATCH ?{where} "
                "ORDER BY score, f.rowid LIMIT ?",
                [match, *params, k],
            ).fetchall()
        else:
            ranked = self.conn.execute(
                f"SELECT rowid, bm25(document_fts, {weights}) AS score FROM document_fts "
                "WHERE document_fts MATCH ? ORDER BY score, rowid LIMIT ?",
                [match, k],
            ).fetchall()
        if not ranked:
            return []
        scores = dict(ranked)
        marks = ",".join("?" * len(ranked))
        rows = self.conn.execute(
            "SELECT d.rowid, d.doc_id, d.title, d.source, d.source_type, d.published_at, "
            f"d.companies, snippet(document_fts, 1, '', '', ' ... ', {SNIPPET_TOKENS}) "
            "FROM document_fts JOIN document d ON d.rowid = document_fts.rowid "
            f"WHERE document_fts MATCH ? AND document_fts.rowid IN ({marks})",
            [match, *scores],
        ).fetchall()
        hits = {row[0]: Hit(*row, round(-scores[row[0]], 4)) for row in rows}
        return [hits[rowid] for rowid, _ in ranked if rowid in hits]
