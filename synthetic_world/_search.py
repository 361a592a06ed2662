"""BM25 search over the world's documents (SQLite FTS5), with stable rankings.

A query is cut into words, stop words dropped, and run first as an AND of all its words (precise
and fast); when that finds fewer than ``k`` documents, an OR of its rarer words fills the rest
(words found in most documents make an OR slow and rank nothing), each scored at most as the last
document holding every word, so scores never rise down the list. Ties break on the document id,
so the same query always returns the same list. Filters (company, source type, publication
dates) are SQL conditions on the matches. ``bench/bench_world.py`` compares this engine with
``bm25s`` on the same queries.

The cost of a query is bounded, whatever the world's size: no step reads the index beyond about
``SCORED_CAP`` documents per word. A word's documents are counted only up to that cap; a word in
more is common. A query with a rarer word (a company's name, a product) is ranked by bm25 over its
rarer words alone, among the documents that hold every word (and the company filter): bm25's IDF
of a common word would read the word's whole list, and every match holds it anyway. Snippets are
cut around the ranking words for the same reason. An AND whose every word is common, or an OR of
nothing but common words, is ranked by the words each document holds among the newest documents
that pass the filters (the company's newest with a company filter; ``SCORED_CAP`` word entries
read in all, at least ``MIN_WINDOW`` documents), never among all of them.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, replace

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
SCORED_CAP = 2_000
"""A word in more documents than this is common (module docstring)."""
MIN_WINDOW = 200
"""A query of common words only is ranked among the newest ``SCORED_CAP / words`` documents,
and never fewer than this."""

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
        """How many documents contain ``word`` (after stemming), counted up to one past
        :data:`SCORED_CAP` (a common word costs no more to count than a rare one); remembered
        per engine."""
        if word in self._frequency:
            self._frequency.move_to_end(word)
            return self._frequency[word]
        (count,) = self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM document_fts WHERE document_fts MATCH ? LIMIT ?)",
            (f'"{word}"', SCORED_CAP + 1),
        ).fetchone()
        self._frequency[word] = count
        if len(self._frequency) > 20_000:
            self._frequency.popitem(last=False)
        return count

    def _rare(self, words: list[str]) -> list[str]:
        """The words an OR may use: each in few documents, together in at most twice
        :data:`SCORED_CAP` (rarest first), kept in the query's order."""
        limit = min(RARE_SHARE * self.documents, SCORED_CAP)
        counted = sorted((self.frequency(w), i) for i, w in enumerate(words))
        chosen, total = [], 0
        for count, index in counted:
            if count > limit or (chosen and total + count > 2 * SCORED_CAP):
                break
            chosen.append(index)
            total += count
        return [words[i] for i in sorted(chosen)]

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
        company = f'companies : "{company_id.lower()}"' if company_id else ""
        scope = f"{company} AND " if company else ""
        window = Window(conditions, params, published_before, company)
        rare = [w for w in words if self.frequency(w) <= SCORED_CAP]
        if not rare:  # bm25 would read every common word's whole list for its IDF
            return self._newest_by_words(words, scope, k, window)
        # Ranked by bm25 over the rare words alone (their lists are short), among the documents
        # holding every word and the company: a common word's or a company's IDF would read its
        # whole list, and every match holds them anyway (the company column weighs 0).
        every = scope + "(" + " AND ".join(_quoted(words)) + ")"
        rank_by = " AND ".join(_quoted(rare)) if rare != words or scope else None
        hits = self._run(every, k, conditions, params, rank_by=rank_by)
        if len(hits) < k and len(words) > 1:
            fallback = self._rare(words)
            seen = {h.rowid for h in hits}
            if fallback:
                any_rare = "(" + " OR ".join(_quoted(fallback)) + ")"
                more = self._run(
                    scope + any_rare,
                    k + len(hits),
                    conditions,
                    params,
                    rank_by=any_rare if scope else None,
                )
            else:
                more = self._newest_by_words(words, scope, k + len(hits), window, every=False)
            extra = [h for h in more if h.rowid not in seen][: k - len(hits)]
            if hits:  # ranked below every hit holding all the words: never scored above them
                floor = hits[-1].score
                extra = [replace(h, score=min(h.score, floor)) for h in extra]
            hits += extra
        return hits

    def _newest_by_words(
        self, words: list[str], scope: str, k: int, window: Window, *, every: bool = True
    ) -> list[Hit]:
        """Common words only: the newest documents that pass the filters (module docstring),
        ranked by the words they hold (a title word counts as bm25 weighs a title), newest first
        on ties; with ``every`` only documents holding all the words. Reads each word's entries
        in that rowid range alone, so its cost does not grow with the world."""
        span = window.newest(self.conn, max(MIN_WINDOW, SCORED_CAP // len(words)))
        if span is None:
            return []
        scores: dict[int, float] = {}
        held: dict[int, int] = {}
        title_weight, body_weight = BM25_WEIGHTS[0], BM25_WEIGHTS[1]
        for word in words:
            for column, weight in (("title", title_weight), ("body", body_weight)):
                for (rowid,) in self._in_range(f"{scope}{column} : {_quoted([word])[0]}", span):
                    scores[rowid] = scores.get(rowid, 0.0) + weight
                    if column == "body":
                        held[rowid] = held.get(rowid, 0) + 1
        if window.conditions:
            passing = self._passing(window, span)
            scores = {r: v for r, v in scores.items() if r in passing}
        if every:
            scores = {r: v for r, v in scores.items() if held.get(r, 0) == len(words)}
        ranked = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:k]
        match = scope + "(" + " OR ".join(_quoted(words)) + ")"
        rows = [self._snippet_row(match, rowid) for rowid, _ in ranked]
        return [
            Hit(*row, round(score, 4)) for row, (_, score) in zip(rows, ranked, strict=True) if row
        ]

    def _in_range(self, match: str, span: tuple[int, int]) -> list[tuple[int]]:
        return self.conn.execute(
            "SELECT rowid FROM document_fts WHERE document_fts MATCH ? AND rowid BETWEEN ? AND ?",
            [match, *span],
        ).fetchall()

    def _passing(self, window: Window, span: tuple[int, int]) -> set[int]:
        where = "".join(f" AND {c}" for c in window.conditions)
        return {
            rowid
            for (rowid,) in self.conn.execute(
                f"SELECT d.rowid FROM document d WHERE d.rowid BETWEEN ? AND ?{where}",
                [*span, *window.params],
            )
        }

    def _run(
        self,
        match: str,
        k: int,
        conditions: list[str],
        params: list,
        *,
        rank_by: str | None = None,
    ) -> list[Hit]:
        """The top ``k`` of ``match``: ranked first (bm25 of ``rank_by``, default ``match``,
        joined to the document table only when a filter needs it), then the snippets of just
        those ``k`` (a snippet costs more than a score, and SQLite would compute one for every
        match before sorting), cut around the words of ``rank_by``."""
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        where = "".join(f" AND {c}" for c in conditions)
        join = "JOIN document d ON d.rowid = f.rowid " if _needs_join(conditions) else ""
        among = ""
        if rank_by is not None:
            among = " AND f.rowid IN (SELECT rowid FROM document_fts WHERE document_fts MATCH ?)"
        ranked = self.conn.execute(
            f"SELECT f.rowid, bm25(document_fts, {weights}) AS score FROM document_fts f "
            f"{join}WHERE document_fts MATCH ?{among}{where} "
            "ORDER BY score, f.rowid LIMIT ?",
            [rank_by or match, *([match] if rank_by is not None else []), *params, k],
        ).fetchall()
        if not ranked:
            return []
        scores = dict(ranked)
        # The snippet is cut around the ranking words too: locating a document in a common
        # word's list costs more the longer the list (the world) is.
        rows = [self._snippet_row(rank_by or match, rowid) for rowid in scores]
        hits = {row[0]: Hit(*row, round(-scores[row[0]], 4)) for row in rows if row}
        return [hits[rowid] for rowid, _ in ranked if rowid in hits]

    def _snippet_row(self, match: str, rowid: int) -> tuple | None:
        """One ranked document with its snippet: a lookup by rowid, so FTS5 reads only that
        document's entries (a ``rowid IN (...)`` beside MATCH would walk every match)."""
        return self.conn.execute(
            "SELECT d.rowid, d.doc_id, d.title, d.source, d.source_type, d.published_at, "
            f"d.companies, snippet(document_fts, 1, '', '', ' ... ', {SNIPPET_TOKENS}) "
            "FROM document_fts JOIN document d ON d.rowid = document_fts.rowid "
            "WHERE document_fts MATCH ? AND document_fts.rowid = ?",
            [match, rowid],
        ).fetchone()


@dataclass(frozen=True)
class Window:
    """A query's filters, and the rowid range of the newest documents that pass them (rowids
    follow publication dates: documents are written in date order)."""

    conditions: list[str]
    params: list
    published_before: str | None
    company: str = ""
    """A company filter (``companies : "id"``): the window is then that company's newest
    documents, not the world's."""

    def newest(self, conn: sqlite3.Connection, size: int) -> tuple[int, int] | None:
        """The lowest and highest rowid of the newest ``size`` documents that pass the filters
        (None when none does); read from the document table, in rowid order from the date bound
        down, so its cost does not grow with the world."""
        ceiling = None
        if self.published_before:
            row = conn.execute(
                "SELECT rowid FROM document WHERE published_at <= ? "
                "ORDER BY published_at DESC, rowid DESC LIMIT 1",
                [self.published_before],
            ).fetchone()
            if row is None:
                return None
            ceiling = row[0]
        where = "".join(f" AND {c}" for c in self.conditions)
        below = " AND d.rowid <= ?" if ceiling is not None else ""
        bound = [*self.params, *([ceiling] if ceiling is not None else []), size]
        if self.company:
            span = conn.execute(
                "SELECT min(rowid), max(rowid) FROM (SELECT d.rowid AS rowid FROM document_fts f "
                f"JOIN document d ON d.rowid = f.rowid WHERE document_fts MATCH ?{where}{below} "
                "ORDER BY f.rowid DESC LIMIT ?)",
                [self.company, *bound],
            ).fetchone()
        else:
            span = conn.execute(
                "SELECT min(rowid), max(rowid) FROM (SELECT d.rowid AS rowid FROM document d "
                f"WHERE 1{where}{below} ORDER BY d.rowid DESC LIMIT ?)",
                bound,
            ).fetchone()
        return None if span[0] is None else (span[0], span[1])


def _needs_join(conditions: list[str]) -> bool:
    """Whether a condition reads the document table (the rowid floor alone does not)."""
    return any(condition.startswith("d.") for condition in conditions)
