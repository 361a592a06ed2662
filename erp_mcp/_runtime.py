"""What the tools share while the server runs: the read-only engine, ERP facts and a party index.

``ErpRuntime.open`` is called from the server lifespan (and lazily by record pages). Everything here
is read once from the snapshot: the database is read-only, so nothing can go stale.
"""

from __future__ import annotations

import bisect
import datetime as dt
import gc
import heapq
import itertools
import re
import threading
from array import array
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from fastmcp.exceptions import ToolError
from rapidfuzz import fuzz, process, utils
from sqlalchemy import Engine, func, select

from erp_mcp._summaries import Summaries, load_summaries
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_resource_uri, record_url
from synthetic_erp._db import open_engine, read_meta

DEFAULT_PUBLIC_URL = "http://127.0.0.1:8765"
RESOURCE_LINKS = "erp://"
"""``public_url`` value that makes record links MCP resource URIs (stdio: no HTTP server)."""
RESOURCE_TEMPLATE = "erp://{legal_entity}/{entity_set}/{key}"


def resource_uri(entity_set: str, legal_entity: str, key: str) -> str:
    """The MCP resource URI of a record, e.g. ``erp://USMF/customers/SYNCUS-0001``."""
    return record_resource_uri(entity_set, legal_entity, key)


@dataclass(frozen=True)
class PartyEntry:
    party_type: str
    """customer | vendor"""
    legal_entity: str
    account: str
    name: str


_ACCOUNT = re.compile(r"^([A-Za-z]+)[-_ ]?0*(\d+)$")


def account_key(text: str) -> tuple[str, int] | None:
    """``SYNCUS-0001`` and ``SYNCUS-000001`` -> ("SYNCUS", 1): account ids without zero padding."""
    match = _ACCOUNT.match(text.strip())
    return (match.group(1).upper(), int(match.group(2))) if match else None


def _compact(text: str) -> str:
    """Lower-case letters and digits only: "Forest Whole sale" -> "forestwholesale"."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


_GRAM = 3
"""Length of the n-grams (of compact names) that find the names containing a query."""
_GRAM_POSTINGS_MAX = 2000
"""Trigrams in more compact names than this keep no posting list: a query whose rarest trigram is
that common scans the joined names instead (it has many hits, so the scan stops early)."""


def _partial_score(length: int, name_length: int) -> float:
    """The rounded score of a partial-name match of a compact query in a compact name, as
    ``PartyIndex._score`` and ``search`` compute it."""
    return round(85.0 + 10.0 * (length / max(name_length, 1)), 1)


@dataclass
class PartyIndex:
    """All customers and vendors in memory, for fuzzy name and account resolution.

    A search scores three kinds of candidates with ``_score``: the account hits, the names that
    contain the query's letters (found through a trigram index, best first, so the search stops
    once the best ``limit`` are in), and the names sharing (fuzzy) words with the query (through
    the vocabulary of name words). None of these walks every party."""

    entries: list[PartyEntry] = field(default_factory=list)
    _names: list[str] = field(default_factory=list)
    _compact_names: list[str] = field(default_factory=list)
    _by_account: dict[str, list[int]] = field(default_factory=dict)
    _accounts: list[str] = field(default_factory=list)
    _by_name: dict[str, list[int]] = field(default_factory=dict)
    _by_account_key: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    _by_word: dict[str, array[int]] = field(default_factory=dict)
    """Name word -> the entries whose name has it (ascending int32; numpy reads them in place)."""
    _word_lists: dict[str, list[int]] = field(default_factory=dict)
    """``_by_word`` while parties are added."""
    _vocabulary: list[str] = field(default_factory=list)
    _ranked: array[int] = field(default_factory=lambda: array("i"))
    """Entry indices best partial match first: by compact name length, then name, legal entity and
    account (the order ``search`` ranks equal scores in)."""
    _ranked_compact: list[str] = field(default_factory=list)
    """The compact names in ``_ranked`` order."""
    _joined: str = ""
    """The compact names in ``_ranked`` order, NUL-joined: queries with no rare trigram scan it."""
    _offsets: array[int] = field(default_factory=lambda: array("l"))
    _grams: dict[str, array[int] | None] = field(default_factory=dict)
    """Trigram -> ranks (ascending) of the compact names containing it; None when it is in more
    than ``_GRAM_POSTINGS_MAX`` names. A trigram that is absent is in no name."""
    _completions: dict[tuple[str | None, str | None], tuple[list[str], list[str]]] = field(
        default_factory=dict
    )
    """(party_type or None, legal_entity or None) -> (upper-case keys, accounts), sorted, for
    account completions by prefix without walking every party."""

    @classmethod
    def load(cls, engine: Engine) -> PartyIndex:
        index = cls()
        with engine.connect() as conn:
            for party_type, table in (("customer", s.Customer), ("vendor", s.Vendor)):
                t = table.__table__
                rows = conn.execute(
                    select(t.c.legal_entity, t.c.account, t.c.name).order_by(
                        t.c.legal_entity, t.c.account
                    )
                )
                for le, account, name in rows:
                    index._add(PartyEntry(party_type, le, account, name))
        index._finish()
        return index

    def _finish(self) -> None:
        entries, compact = self.entries, self._compact_names
        self._by_word = {w: array("i", p) for w, p in self._word_lists.items()}
        self._word_lists = {}
        self._ranked = array(
            "i",
            sorted(
                range(len(entries)),
                key=lambda i: (len(compact[i]), entries[i].name, entries[i].legal_entity,
                               entries[i].account),
            ),
        )  # fmt: skip
        self._ranked_compact = [compact[i] for i in self._ranked]
        offsets, position = array("l"), 0
        for name in self._ranked_compact:
            offsets.append(position)
            position += len(name) + 1
        self._offsets = offsets
        self._joined = "\x00".join(self._ranked_compact)
        grams: dict[str, array[int]] = {}
        for rank, name in enumerate(self._ranked_compact):
            for gram in {name[j : j + _GRAM] for j in range(len(name) - _GRAM + 1)}:
                posting = grams.get(gram)
                if posting is None:
                    grams[gram] = posting = array("i")
                posting.append(rank)
        self._grams = {g: p if len(p) <= _GRAM_POSTINGS_MAX else None for g, p in grams.items()}
        scopes: dict[tuple[str | None, str | None], set[str]] = {}
        for entry in self.entries:
            for party_type in (entry.party_type, None):
                for le in (entry.legal_entity, None):
                    scopes.setdefault((party_type, le), set()).add(entry.account)
        upper: dict[str, str] = {}  # the same string object when an account is upper case
        for accounts in scopes.values():
            for a in accounts:
                if a not in upper:
                    key = a.upper()
                    upper[a] = a if key == a else key
        for scope, accounts in scopes.items():
            ordered = sorted(accounts, key=lambda a: (upper[a], a))
            self._completions[scope] = ([upper[a] for a in ordered], ordered)

    def accounts_starting(
        self, prefix: str, party_type: str | None, legal_entity: str | None, limit: int
    ) -> tuple[list[str], int]:
        """The first ``limit`` distinct accounts whose upper-case form starts with ``prefix``
        (upper case), in order, and how many there are (two binary searches)."""
        keys, accounts = self._completions.get((party_type, legal_entity), ([], []))
        low = bisect.bisect_left(keys, prefix)
        high = bisect.bisect_left(keys, prefix + "\U0010ffff") if prefix else len(keys)
        return accounts[low : min(high, low + limit)], high - low

    def _add(self, entry: PartyEntry) -> None:
        self._by_account.setdefault(entry.account.upper(), []).append(len(self.entries))
        self.entries.append(entry)
        self._names.append(utils.default_process(entry.name))
        self._compact_names.append(_compact(entry.name))
        self._accounts.append(entry.account.upper())
        index = len(self.entries) - 1
        key = account_key(entry.account)
        if key is not None:
            self._by_account_key.setdefault(key, []).append(index)
        self._by_name.setdefault(self._names[-1], []).append(index)
        for word in set(self._names[-1].split()):
            if word not in self._word_lists:
                self._word_lists[word] = []
                self._vocabulary.append(word)
            self._word_lists[word].append(index)

    def exact(self, text: str, party_type: str, legal_entity: str | None) -> list[PartyEntry]:
        """Parties whose account (else whose name) equals ``text``, ignoring case."""
        key = account_key(text)
        for index in (self._by_account.get(text.strip().upper(), []),
                      self._by_account_key.get(key, []) if key else [],
                      self._by_name.get(utils.default_process(text), [])):  # fmt: skip
            found = [
                self.entries[i]
                for i in index
                if self.entries[i].party_type == party_type
                and (legal_entity is None or self.entries[i].legal_entity == legal_entity)
            ]
            if found:
                return found
        return []

    def search(
        self,
        query: str,
        *,
        party_type: str = "any",
        legal_entity: str | None = None,
        limit: int = 10,
        min_score: float = 60.0,
    ) -> list[tuple[PartyEntry, float, str]]:
        """Ranked ``(entry, score 0-100, match kind)`` for a name, partial name, account or typo."""

        def allowed(i: int) -> bool:
            entry = self.entries[i]
            if party_type != "any" and entry.party_type != party_type:
                return False
            return legal_entity is None or entry.legal_entity == legal_entity

        scores: dict[int, tuple[float, str]] = {}
        for i in self._by_account.get(query.strip().upper(), []):
            if allowed(i):
                scores[i] = (100.0, "account")
        key = account_key(query)
        for i in self._by_account_key.get(key, []) if key else []:
            if allowed(i) and i not in scores:
                scores[i] = (98.0, "account_number")
        if not scores and any(ch.isdigit() for ch in query):
            for _, score, i in process.extract(
                query.strip().upper(), self._accounts, scorer=fuzz.ratio, limit=limit * 4
            ):
                if i not in scores and allowed(i) and score >= 80:
                    scores[i] = (round(score * 0.9, 1), "similar_account")
        processed = utils.default_process(query)
        compact = _compact(query)
        if processed:
            everyone = party_type == "any" and legal_entity is None
            fresh = [
                i
                for i in self._candidates(processed, compact, limit, allowed, scores)
                if i not in scores and (everyone or allowed(i))
            ]
            scores.update(self._scores(fresh, processed, compact, scores, limit, min_score))
        ranked = sorted(
            ((self.entries[i], round(score, 1), kind) for i, (score, kind) in scores.items()),
            key=lambda item: (-item[1], item[0].name, item[0].legal_entity, item[0].account),
        )
        return [item for item in ranked if item[1] >= min_score][:limit]

    def _candidates(
        self,
        processed: str,
        compact: str,
        limit: int,
        allowed: Callable[[int], bool],
        scored: Container[int],
    ) -> set[int]:
        """Entries worth scoring: exact names, the best names containing the query's letters and
        entries sharing (fuzzy) words.

        Matching query words against the vocabulary of name words keeps the search proportional to
        the vocabulary and to the rarest matching words, not to the number of parties."""
        found: set[int] = set(self._by_name.get(processed, []))
        if compact:
            found.update(self._containing(compact, limit, allowed, scored))
        words = [w for w in processed.split() if len(w) >= 2]
        words += [a + b for a, b in itertools.pairwise(processed.split())]
        if len(compact) >= 4:
            words.append(compact)
        postings: list[tuple[int, float, array[int]]] = []
        for word in set(words):
            for match, score, _ in process.extract(
                word, self._vocabulary, scorer=fuzz.ratio, limit=8, score_cutoff=70
            ):
                entries = self._by_word[match]
                postings.append((len(entries), score, entries))
        if not postings:
            return found
        postings.sort(key=lambda p: (p[0], -p[1]))
        budget, used = 4000, []
        for size, score, entries in postings:
            if size > budget and used:
                continue
            budget -= size
            used.append((score, entries))
        # Weight: the sum of the scores of the used postings an entry is in (in their order); the
        # 300 heaviest are kept, equal weights in order of first appearance. Counted in numpy: at
        # 100x the used postings hold about 4,000 entries, which cost milliseconds in a dict.
        if len(used) == 1:  # one weight for all
            return found.union(used[0][1][:300].tolist())
        import numpy as np  # here, not at module level: a server start need not load numpy

        entries = np.concatenate([np.frombuffer(posting, dtype=np.int32) for _, posting in used])
        scores = np.repeat([score for score, _ in used], [len(posting) for _, posting in used])
        unique, first, inverse = np.unique(entries, return_index=True, return_inverse=True)
        weights = np.bincount(inverse, weights=scores)  # summed in the order of the postings
        heaviest = np.lexsort((first, -weights))[:300]
        return found.union(unique[heaviest].tolist())

    def _containing(
        self, compact: str, limit: int, allowed: Callable[[int], bool], scored: Container[int]
    ) -> list[int]:
        """The entries whose compact name contains ``compact`` that can rank among the best
        ``limit`` of them (allowed, not already ``scored``): ranks are walked in ``_ranked`` order,
        best partial score first, and the walk stops past the ``limit``-th hit's rounded score."""
        length = len(compact)
        posting = None
        if length >= _GRAM:
            postings = []
            for j in range(length - _GRAM + 1):
                gram = compact[j : j + _GRAM]
                if gram not in self._grams:
                    return []  # no name has this trigram, so none contains the query
                postings.append(self._grams[gram])
            known = [p for p in postings if p is not None]
            posting = min(known, key=len) if known else None
        hits: list[int] = []
        floor: float | None = None  # the rounded score of the limit-th hit

        def keep(rank: int) -> bool:
            """Record the hit at ``rank``; False once past the last score that can rank."""
            nonlocal floor
            name_length = len(self._ranked_compact[rank])
            if floor is not None and _partial_score(length, name_length) < floor:
                return False
            i = self._ranked[rank]
            if i not in scored and allowed(i):
                hits.append(i)
                if floor is None and len(hits) >= limit:
                    floor = _partial_score(length, name_length)
            return True

        if posting is not None:
            names = self._ranked_compact
            for rank in posting:
                if compact in names[rank] and not keep(rank):
                    break
            return hits
        joined, offsets = self._joined, self._offsets
        start = joined.find(compact)
        while start != -1:
            rank = bisect.bisect_right(offsets, start) - 1
            if not keep(rank):
                break
            start = joined.find(compact, offsets[rank] + len(self._ranked_compact[rank]) + 1)
        return hits

    def _scores(
        self,
        candidates: list[int],
        processed: str,
        compact: str,
        scored: dict[int, tuple[float, str]],
        limit: int,
        min_score: float,
    ) -> dict[int, tuple[float, str]]:
        """``_score`` of the candidates that can rank among the best ``limit`` (next to the
        ``scored`` ones) with at least ``min_score``; the others are left out.

        Every fuzzy score is at least its letters' ratio, so the ``limit``-th best of the known
        scores and those ratios is a floor no result falls under: WRatio, the dearest part, runs
        with a cutoff from it and the entries it cannot lift over the floor are dropped."""
        names, compacts = self._names, self._compact_names
        found: dict[int, tuple[float, str]] = {}
        fuzzy: list[int] = []
        for i in candidates:
            if (compact and compact in compacts[i]) or processed == names[i]:
                found[i] = self._score(i, processed, compact)
            else:
                fuzzy.append(i)
        if not fuzzy:
            return found
        # (choice, ratio, position in fuzzy), best first; the same figures as fuzz.ratio one by one
        wholes = process.extract(
            compact, [compacts[i] for i in fuzzy], scorer=fuzz.ratio, limit=None
        )
        floors = [score for score, _ in scored.values()]
        floors += [score for score, _ in found.values()]
        floors += [min(whole, 98.0) for _, whole, _ in wholes[:limit]]
        floor = heapq.nlargest(limit, floors)[-1] if len(floors) >= limit else 0.0
        # 0.2 below: an entry under the floor by less could round to the same score and rank in
        floor = max(floor, min_score) - 0.2
        weighted: dict[int, float] = {}
        if floor / 0.95 <= 100:
            weighted = {
                j: score
                for _, score, j in process.extract(
                    processed,
                    [names[i] for i in fuzzy],
                    scorer=fuzz.WRatio,
                    score_cutoff=max(floor / 0.95, 0.0),
                    limit=None,
                )
            }
        for _, whole, j in wholes:  # best ratio first
            if whole < floor:
                break
            # exact: WRatio is known, or under its cutoff, where it cannot beat the ratio
            score = min(max(whole, weighted.pop(j, 0.0) * 0.95), 98.0)
            if score >= floor:
                found[fuzzy[j]] = (score, "fuzzy_name")
        for j, weight in weighted.items():  # lifted over the floor by WRatio alone
            i = fuzzy[j]
            score = min(max(fuzz.ratio(compact, compacts[i]), weight * 0.95), 98.0)
            if score >= floor:
                found[i] = (score, "fuzzy_name")
        return found

    def _letter_score(self, i: int, processed: str, compact: str) -> tuple[float, str] | None:
        """The score of a name equal to the query, or with the same letters, or containing them;
        None for a fuzzy match."""
        name, compact_name = self._names[i], self._compact_names[i]
        if processed == name:
            return 100.0, "exact_name"
        if compact and compact == compact_name:
            return 99.0, "same_letters"
        if compact and compact in compact_name:
            share = len(compact) / max(len(compact_name), 1)
            return 85.0 + 10.0 * share, "partial_name"
        return None

    def _score(self, i: int, processed: str, compact: str) -> tuple[float, str]:
        """The score and match kind of entry ``i`` for a query (``search`` ranks by it)."""
        letters = self._letter_score(i, processed, compact)
        if letters is not None:
            return letters
        whole = fuzz.ratio(compact, self._compact_names[i])
        weighted = fuzz.WRatio(processed, self._names[i])
        return min(max(whole, weighted * 0.95), 98.0), "fuzzy_name"


@dataclass
class LegalEntityFacts:
    code: str
    name: str
    accounting_currency: str
    country: str
    fiscal_year_start_month: int


@dataclass
class ErpRuntime:
    """The open ERP and the facts every tool needs."""

    engine: Engine
    base_url: str
    today: dt.date
    meta: dict[str, str]
    legal_entities: dict[str, LegalEntityFacts]
    currencies: dict[str, str]
    parties: PartyIndex
    reference: dict[tuple, Any]
    """Small setup tables kept in memory: (table name, legal_entity, key) -> row mapping."""
    party_counts: dict[tuple[str, str], int]
    """(legal_entity, party_type) -> number of parties."""
    row_counts: dict[str, int] = field(default_factory=dict)
    """Rows per table, counted once when first asked (the snapshot never changes)."""
    summaries: Summaries | None = None
    """What the ERP's summary tables cover (None: it has none; every tool reads raw rows)."""

    @classmethod
    def open(cls, db_url: str, public_url: str | None) -> ErpRuntime:
        engine = open_engine(db_url, read_only=True)
        meta = read_meta(engine)
        with engine.connect() as conn:
            les = {
                row.code: LegalEntityFacts(
                    row.code,
                    row.name,
                    row.accounting_currency,
                    row.country,
                    row.fiscal_year_start_month,
                )
                for row in conn.execute(select(s.LegalEntity.__table__).order_by("code"))
            }
            currencies = {
                row.code: row.name
                for row in conn.execute(select(s.Currency.__table__).order_by("code"))
            }
        return cls(
            engine=engine,
            base_url=public_url
            if public_url == RESOURCE_LINKS
            else (public_url or DEFAULT_PUBLIC_URL).rstrip("/"),
            today=dt.date.fromisoformat(meta["as_of"]),
            meta=meta,
            legal_entities=les,
            currencies=currencies,
            parties=PartyIndex.load(engine),
            reference=_load_reference(engine),
            party_counts=_party_counts(engine),
            summaries=load_summaries(engine, dt.date.fromisoformat(meta["as_of"])),
        )

    def close(self) -> None:
        self.engine.dispose()

    def row_count(self, table: Any) -> int:
        """Rows in ``table`` (counted on first use, then remembered)."""
        if table.name not in self.row_counts:
            with self.engine.connect() as conn:
                count = conn.execute(select(func.count()).select_from(table)).scalar()
            self.row_counts[table.name] = int(count or 0)
        return self.row_counts[table.name]

    def url(self, entity_set: str, legal_entity: str, key: Any) -> str | None:
        if key is None or key == "":
            return None
        if self.resource_links:
            return resource_uri(entity_set, legal_entity, str(key))
        return record_url(self.base_url, entity_set, legal_entity, str(key))

    @property
    def resource_links(self) -> bool:
        """True when record links are ``erp://`` resource URIs (read with resources/read)."""
        return self.base_url == RESOURCE_LINKS

    @property
    def url_pattern(self) -> str:
        """The pattern of record links, e.g. ``{base}/erp/{legal_entity}/{entity_set}/{key}``."""
        if self.resource_links:
            return RESOURCE_TEMPLATE
        return f"{self.base_url}/erp/{{legal_entity}}/{{entity_set}}/{{key}}"

    # -- argument checks -------------------------------------------------------------------------

    def check_legal_entity(self, code: str | None) -> str | None:
        """The canonical legal-entity code, or a ToolError naming the known ones."""
        if code is None:
            return None
        canonical = code.strip().upper()
        if canonical in self.legal_entities:
            return canonical
        known = ", ".join(self.legal_entities)
        raise ToolError(f"unknown legal_entity {code!r}; known legal entities: {known}")

    def check_currency(self, code: str | None) -> str | None:
        if code is None:
            return None
        canonical = code.strip().upper()
        if canonical in self.currencies:
            return canonical
        raise ToolError(
            f"unknown currency {code!r}; known currencies: {', '.join(self.currencies)}"
        )

    def resolve_party(
        self, party_type: str, account: str, legal_entity: str | None
    ) -> tuple[str, str]:
        """``(legal_entity, account)`` of an existing party, or a ToolError with the closest
        matches.

        ``account`` may also be the party's exact name. Without ``legal_entity`` the account must
        exist in exactly one legal entity."""
        le = self.check_legal_entity(legal_entity)
        wanted = account.strip()
        matches = self.parties.exact(wanted, party_type, le)
        if len(matches) == 1:
            return matches[0].legal_entity, matches[0].account
        if len(matches) > 1:
            options = "; ".join(f"{e.legal_entity}/{e.account} ({e.name})" for e in matches)
            raise ToolError(
                f"{party_type} {account!r} matches several parties: {options}. "
                "Pass the account id and legal_entity of the one you mean."
            )
        closest = self.parties.search(
            wanted, party_type=party_type, legal_entity=le, limit=5, min_score=60.0
        )
        where = f" in legal entity {le}" if le else ""
        hint = (
            "closest matches: "
            + "; ".join(f"{e.legal_entity}/{e.account} {e.name!r}" for e, _, _ in closest)
            if closest
            else "no similar names; use search_parties to find the account"
        )
        raise ToolError(f"no {party_type} with account {account!r}{where}; {hint}")

    def party_name(self, party_type: str, legal_entity: str, account: str) -> str | None:
        for i in self.parties._by_account.get(account.upper(), []):
            entry = self.parties.entries[i]
            if entry.party_type == party_type and entry.legal_entity == legal_entity:
                return entry.name
        return None


_REFERENCE_KEYS = {
    s.PaymentTerms: ("terms_id",),
    s.CashDiscount: ("code",),
    s.MethodOfPayment: ("party_type", "code"),
    s.CustomerGroup: ("group_id",),
    s.VendorGroup: ("group_id",),
    s.CollectionsPool: ("pool_id",),
    s.CollectionsAgent: ("agent_id",),
}


def _party_counts(engine: Engine) -> dict[tuple[str, str], int]:
    counts = {}
    with engine.connect() as conn:
        for party_type, table in (("customer", s.Customer), ("vendor", s.Vendor)):
            t = table.__table__
            for le, n in conn.execute(
                select(t.c.legal_entity, func.count()).group_by(t.c.legal_entity)
            ):
                counts[(le, party_type)] = int(n)
    return counts


def _load_reference(engine: Engine) -> dict[tuple, Any]:
    out: dict[tuple, Any] = {}
    with engine.connect() as conn:
        for table, keys in _REFERENCE_KEYS.items():
            for row in conn.execute(select(table.__table__)):
                m = row._mapping
                out[(table.__tablename__, m["legal_entity"], *(m[k] for k in keys))] = row
    return out


class RuntimeHolder:
    """Holds the runtime between lifespan start and stop; record pages may open it lazily."""

    def __init__(self, db_url: str, public_url: str | None) -> None:
        self.db_url = db_url
        self.public_url = public_url
        self._runtime: ErpRuntime | None = None
        self._lock = threading.Lock()

    def get(self) -> ErpRuntime:
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = ErpRuntime.open(self.db_url, self.public_url)
                    keep_out_of_collections()
        return self._runtime

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None
                gc.unfreeze()


def keep_out_of_collections() -> None:
    """Move every object alive now (the server, its schemas, the party index: about a million
    objects at 100x) out of the garbage collector's reach.

    A full collection walks every tracked object while holding the GIL, so with the resident
    objects in its generations each one paused every session for about a second at 100x. Frozen,
    they are never walked again (they live as long as the server); collections then only see
    what calls allocate. ``close`` unfreezes them."""
    gc.collect()
    gc.freeze()
