"""What the tools share while the server runs: the read-only engine, ERP facts and a party index.

``ErpRuntime.open`` is called from the server lifespan (and lazily by record pages). Everything here
is read once from the snapshot: the database is read-only, so nothing can go stale.
"""

from __future__ import annotations

import bisect
import datetime as dt
import gc
import itertools
import re
import threading
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


@dataclass
class PartyIndex:
    """All customers and vendors in memory, for fuzzy name and account resolution."""

    entries: list[PartyEntry] = field(default_factory=list)
    _names: list[str] = field(default_factory=list)
    _compact_names: list[str] = field(default_factory=list)
    _by_account: dict[str, list[int]] = field(default_factory=dict)
    _accounts: list[str] = field(default_factory=list)
    _by_name: dict[str, list[int]] = field(default_factory=dict)
    _by_account_key: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    _by_word: dict[str, list[int]] = field(default_factory=dict)
    _vocabulary: list[str] = field(default_factory=list)
    _joined: str = ""
    """All compact names joined by NUL, for fast substring search."""
    _offsets: list[int] = field(default_factory=list)
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
        offsets, position = [], 0
        for name in self._compact_names:
            offsets.append(position)
            position += len(name) + 1
        self._offsets = offsets
        self._joined = "\x00".join(self._compact_names)
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
            if word not in self._by_word:
                self._by_word[word] = []
                self._vocabulary.append(word)
            self._by_word[word].append(index)

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
            for i in self._candidates(processed, compact):
                if i in scores or not allowed(i):
                    continue
                scores[i] = self._score(i, processed, compact)
        ranked = sorted(
            ((self.entries[i], round(score, 1), kind) for i, (score, kind) in scores.items()),
            key=lambda item: (-item[1], item[0].name, item[0].legal_entity, item[0].account),
        )
        return [item for item in ranked if item[1] >= min_score][:limit]

    def _candidates(self, processed: str, compact: str) -> set[int]:
        """Entries worth scoring: exact names, substring hits and entries sharing (fuzzy) words.

        Matching query words against the vocabulary of name words keeps the search proportional to
        the vocabulary and to the rarest matching words, not to the number of parties."""
        found: set[int] = set(self._by_name.get(processed, []))
        if compact:
            start = self._joined.find(compact)
            while start != -1 and len(found) < 500:
                found.add(bisect.bisect_right(self._offsets, start) - 1)
                start = self._joined.find(compact, start + 1)
        words = [w for w in processed.split() if len(w) >= 2]
        words += [a + b for a, b in itertools.pairwise(processed.split())]
        if len(compact) >= 4:
            words.append(compact)
        weights: dict[int, float] = {}
        postings: list[tuple[int, float, list[int]]] = []
        for word in set(words):
            for match, score, _ in process.extract(
                word, self._vocabulary, scorer=fuzz.ratio, limit=8, score_cutoff=70
            ):
                entries = self._by_word[match]
                postings.append((len(entries), score, entries))
        budget = 4000
        for size, score, entries in sorted(postings, key=lambda p: (p[0], -p[1])):
            if size > budget and weights:
                continue
            budget -= size
            for i in entries:
                weights[i] = weights.get(i, 0.0) + score
        best = sorted(weights, key=lambda i: -weights[i])[:300]
        return found | set(best)

    def _score(self, i: int, processed: str, compact: str) -> tuple[float, str]:
        name, compact_name = self._names[i], self._compact_names[i]
        if processed == name:
            return 100.0, "exact_name"
        if compact and compact == compact_name:
            return 99.0, "same_letters"
        if compact and compact in compact_name:
            share = len(compact) / max(len(compact_name), 1)
            return 85.0 + 10.0 * share, "partial_name"
        whole = fuzz.ratio(compact, compact_name)
        weighted = fuzz.WRatio(processed, name)
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
