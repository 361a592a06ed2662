"""How the question generator picks parameters and names parties.

:class:`ErpView` loads the parties, groups and agents once; :func:`reference` names a party the way
people do (by name, account, a misspelling or a partial name); :class:`Chooser` proposes parameter
sets for a template through the template's own ``choose`` (entity-level) or ``extra`` (one-party)
function, declared next to its phrasings and key in its scenario module.
"""

from __future__ import annotations

import datetime as dt
import difflib
import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import TEMPLATES, OracleContext, long_date

ATTEMPTS = 12
UNSTATED_ENTITY_SHARE = 0.2
"""Of the questions about the default legal entity, the share that leave the entity unstated."""
ENTITY_WORDS = ("in {le}", "in {le}", "in legal entity {le}", "within {le}", "in the {le} company")
ALL_ENTITIES_WORDS = ("across all legal entities", "in all legal entities", "in every legal entity")
AS_OF_WORDS = (
    "as of {date}",
    "as of {date}",
    "as of {iso}",
    "on {date}",
    "as of today",  # never a bare "today": "letters issued to X today" reads as issued today
    "as of today",
    "right now",
    "at the moment",
    "",
)
NONEXISTENT_SHARE = 0.35
"""Of the none items about one party, the share that name a party that does not exist."""

LEGAL_SUFFIXES = {"inc.", "llc", "corp.", "co.", "gmbh", "ag", "kg", "ltd", "plc", "&", "inc"}
FAKE_FIRST = ("Zephyrine", "Quillfeather", "Obsidia", "Marrowind", "Vantaggio", "Brightwater",
              "Juniperhill", "Halcyonix", "Ostrava", "Kestrelmoor")  # fmt: skip
FAKE_SECOND = ("Trading", "Holdings", "Supply", "Works", "Partners", "Outfitters", "Imports")

# --------------------------------------------------------------------------------------------------
# The ERP as the generator sees it
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartyInfo:
    kind: str
    legal_entity: str
    account: str
    name: str


class ErpView:
    """Parties, groups and agents of the ERP, loaded once, in a fixed order."""

    def __init__(self, ctx: OracleContext):
        self.ctx = ctx
        self.parties: dict[tuple[str, str], list[PartyInfo]] = defaultdict(list)
        for kind, table in (("customer", s.Customer), ("vendor", s.Vendor)):
            rows = ctx.session.execute(
                select(table.legal_entity, table.account, table.name).order_by(
                    table.legal_entity, table.account
                )
            )
            for le, account, name in rows:
                self.parties[(kind, le)].append(PartyInfo(kind, le, account, name))
        self.names: dict[tuple[str, str], Counter] = {
            key: Counter(p.name.lower() for p in parties) for key, parties in self.parties.items()
        }
        self.all_names = {p.name.lower() for ps in self.parties.values() for p in ps}
        self.legal_entities = sorted(ctx.legal_entities)
        self.default_le = ctx.default_legal_entity
        self.le_weights = [len(self.parties[("customer", le)]) for le in self.legal_entities]
        self.twin_names = sorted(
            name
            for name, count in Counter(
                p.name for le in self.legal_entities for p in self.parties[("customer", le)]
            ).items()
            if count > 1
        )
        agents = ctx.session.execute(
            select(s.CollectionsAgent.legal_entity, s.CollectionsAgent.agent_id).order_by(
                s.CollectionsAgent.legal_entity, s.CollectionsAgent.agent_id
            )
        )
        self.agents: dict[str, list[str]] = defaultdict(list)
        for le, agent_id in agents:
            self.agents[le].append(agent_id)
        journals = ctx.session.execute(
            select(s.PaymentJournal.legal_entity, s.PaymentJournal.journal_id)
            .where(s.PaymentJournal.status == "open")
            .order_by(s.PaymentJournal.legal_entity, s.PaymentJournal.journal_id)
        )
        self.open_journals: dict[str, list[str]] = defaultdict(list)
        for le, journal_id in journals:
            self.open_journals[le].append(journal_id)

    def pick_le(self, rng: random.Random, kind: str | None = None) -> str:
        """A legal entity, weighted by its number of customers; with ``kind``, one that has
        parties of that kind."""
        if kind is None:
            return rng.choices(self.legal_entities, weights=self.le_weights)[0]
        entities = [le for le in self.legal_entities if self.parties[(kind, le)]]
        if not entities:
            raise ValueError(f"the ERP has no {kind}s; generate a larger ERP")
        weights = [len(self.parties[(kind, le)]) for le in entities]
        return rng.choices(entities, weights=weights)[0]


# --------------------------------------------------------------------------------------------------
# Party references: by name, account, misspelling or partial name
# --------------------------------------------------------------------------------------------------

REFERENCE_MODES = (("name", 35), ("account", 20), ("name_and_account", 10), ("misspelled", 15),
                   ("partial", 20))  # fmt: skip


def reference(view: ErpView, party: PartyInfo, rng: random.Random) -> tuple[str, str]:
    """(text naming the party in the question, mode used)."""
    modes = [m for m, _ in REFERENCE_MODES]
    weights = [w for _, w in REFERENCE_MODES]
    mode = rng.choices(modes, weights=weights)[0]
    names = view.names[(party.kind, party.legal_entity)]
    unique_name = names[party.name.lower()] == 1
    if mode == "misspelled":
        text = misspell(view, party, rng)
        if text:
            return text, mode
        mode = "partial"
    if mode == "partial":
        text = partial_name(view, party)
        if text:
            return text, mode
        mode = "name"
    if mode == "name" and unique_name:
        return party.name, mode
    if mode == "name_and_account":
        return f"{party.name} ({party.account})", mode
    return f"{party.kind} account {party.account}", "account"


def _core_words(name: str) -> list[str]:
    words = name.split()
    while len(words) > 1 and words[-1].lower() in LEGAL_SUFFIXES:
        words.pop()
    return words


def partial_name(view: ErpView, party: PartyInfo) -> str | None:
    """The name without its legal suffix, when that still points to exactly one party."""
    core = " ".join(_core_words(party.name))
    if core == party.name or len(core) < 6:
        return None
    needle = core.lower()
    matches = [n for n in view.names[(party.kind, party.legal_entity)] if needle in n]
    return core if len(matches) == 1 else None


def misspell(view: ErpView, party: PartyInfo, rng: random.Random) -> str | None:
    """A one-typo version of the name that still resolves to this party, and only to it."""
    words = party.name.split()
    candidates = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not candidates:
        return None
    index = rng.choice(candidates)
    word = words[index]
    kind = rng.randrange(3)
    pos = rng.randrange(1, len(word) - 2)
    if kind == 0:
        typo = word[:pos] + word[pos + 1 :]
    elif kind == 1:
        typo = word[:pos] + word[pos + 1] + word[pos] + word[pos + 2 :]
    else:
        typo = word[:pos] + word[pos] + word[pos:]
    if typo == word:
        return None
    text = " ".join([*words[:index], typo, *words[index + 1 :]])
    if text.lower() in view.all_names:
        return None
    if not _resolves_uniquely(
        text.lower(), party.name.lower(), view.names[(party.kind, party.legal_entity)]
    ):
        return None
    return text


MISSPELLING_MARGIN = 0.08
"""The misspelled name must be this much closer (difflib ratio) to its party than to any other."""


def _resolves_uniquely(text: str, target: str, names) -> bool:
    matcher = difflib.SequenceMatcher(None, "", text)
    matcher.set_seq1(target)
    bar = matcher.ratio() - MISSPELLING_MARGIN
    for name in names:
        if name == target:
            continue
        matcher.set_seq1(name)
        # real_quick_ratio >= quick_ratio >= ratio, so the cheap bounds rule most names out.
        if (
            matcher.real_quick_ratio() >= bar
            and matcher.quick_ratio() >= bar
            and matcher.ratio() >= bar
        ):
            return False
    return True


def fake_party_name(view: ErpView, rng: random.Random) -> str:
    """A plausible company name that no party in the ERP has, nor anything close to it."""
    for _ in range(50):
        name = f"{rng.choice(FAKE_FIRST)} {rng.choice(FAKE_SECOND)}"
        first = name.split()[0].lower()
        if not any(first in n for n in view.all_names):
            return name
    raise RuntimeError("could not invent a party name absent from the ERP")


# --------------------------------------------------------------------------------------------------
# Parameter choice per template
# --------------------------------------------------------------------------------------------------


@dataclass
class Draft:
    template: str
    params: dict[str, Any]
    words: dict[str, str]
    """Values for the phrasing placeholders."""
    reference_mode: str | None = None
    party: PartyInfo | None = None
    """The party a misspelled or partial reference stands for (None when it does not exist)."""


def _iso(day) -> str:
    return day.isoformat()


class Chooser:
    """Proposes parameter sets for a template, in a random but seeded order."""

    def __init__(self, view: ErpView, rng: random.Random):
        self.view = view
        self.rng = rng
        self.today = view.ctx.today

    def where(self, le: str | None) -> str:
        """How the question names the legal entity; "" leaves the default one unstated."""
        if le is None:
            return self.rng.choice(ALL_ENTITIES_WORDS)
        if le == self.view.default_le and self.rng.random() < UNSTATED_ENTITY_SHARE:
            return ""
        return self.rng.choice(ENTITY_WORDS).format(le=le)

    def base(self, le: str | None) -> dict[str, str]:
        return {"where": self.where(le), "asof": self.asof()}

    def asof(self) -> str:
        """How the question says "as of today": the date in one of several forms, or in words."""
        form = self.rng.choice(AS_OF_WORDS)
        return form.format(date=long_date(self.today), iso=self.today.isoformat())

    def period(self) -> tuple[dt.date, dt.date, dict[str, str]]:
        """A past window inside the ERP's history (which starts 365 days before today), with
        how the question names it: relative ("last month") or by its dates."""
        today = self.today
        this_month = today.replace(day=1)
        last_month_end = this_month - dt.timedelta(days=1)
        quarter_start = dt.date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
        last_quarter_end = quarter_start - dt.timedelta(days=1)
        last_quarter_start = dt.date(
            last_quarter_end.year, 3 * ((last_quarter_end.month - 1) // 3) + 1, 1
        )
        year_start = dt.date(today.year, 1, 1)
        windows = [
            (last_month_end.replace(day=1), last_month_end, ("last month",)),
            (
                today - dt.timedelta(days=364),
                today,
                ("over the last 12 months", "in the past year"),
            ),
            (last_quarter_start, last_quarter_end, ("last quarter",)),
            (year_start, today, ("so far this year", "year to date")),
            (this_month, today, ("so far this month", "this month")),
        ]
        start, end, relative = windows[self.rng.randrange(len(windows))]
        explicit = (
            f"between {long_date(start)} and {long_date(end)}",
            f"from {long_date(start)} to {long_date(end)}",
        )
        text = self.rng.choice(relative + explicit)
        return start, end, {"period": text}

    def horizon(self, days: int) -> dict[str, str]:
        """The next ``days`` days (today through today + days), in words or by dates."""
        end = self.today + dt.timedelta(days=days)
        text = self.rng.choice(
            (
                f"in the next {days} days",
                f"over the next {days} days",
                f"within the next {days} days",
                f"between {long_date(self.today)} and {long_date(end)}",
                f"by {long_date(end)}",
            )
        )
        return {"horizon": text, "days": str(days)}

    def day(self, day: dt.date) -> str:
        """One day: "today", "yesterday", "tomorrow" or "on <date>"."""
        relative = {0: "today", -1: "yesterday", 1: "tomorrow"}.get((day - self.today).days)
        if relative and self.rng.random() < 0.7:
            return relative
        return f"on {long_date(day)}"

    def proposals(self, template: str, want_none: bool) -> Iterator[Draft]:
        spec = TEMPLATES[template]
        if spec.party:
            yield from self._party_proposals(template, spec.party, want_none)
        else:
            for _ in range(ATTEMPTS):
                draft = spec.choose(self)
                draft.template = template
                yield draft

    # ---- one-party templates ---------------------------------------------------------------

    def _party_proposals(self, template: str, kind: str, want_none: bool) -> Iterator[Draft]:
        spec = TEMPLATES[template]
        extra = spec.extra(self) if spec.extra else ({}, {})
        if want_none and self.rng.random() < NONEXISTENT_SHARE:
            le = self.view.pick_le(self.rng)
            name = fake_party_name(self.view, self.rng)
            params = {"legal_entity": le, "name": name, **extra[0]}
            words = {**self.base(le), "who": name, **extra[1]}
            yield Draft(template, params, words, "nonexistent")
        having = sorted(spec.having(self.view.ctx)) if spec.having and not want_none else []
        for _ in range(ATTEMPTS):
            if having:
                le, account = self.rng.choice(having)
                party = next(p for p in self.view.parties[(kind, le)] if p.account == account)
            else:
                le = self.view.pick_le(self.rng, kind)
                party = self.rng.choice(self.view.parties[(kind, le)])
            who, mode = reference(self.view, party, self.rng)
            params = {"legal_entity": le, "account": party.account, **extra[0]}
            words = {**self.base(le), "who": who, **extra[1]}
            yield Draft(template, params, words, mode, party)

    def top_n_extra(self) -> tuple[dict[str, Any], dict[str, str]]:
        n = self.rng.choice((3, 5, 10))
        return {"n": n}, {"n": str(n)}

    def period_extra(self) -> tuple[dict[str, Any], dict[str, str]]:
        start, end, words = self.period()
        return {"start": _iso(start), "end": _iso(end)}, words

    # ---- entity-level templates ----------------------------------------------------------------

    def entity_only(self) -> Draft:
        return self.le_draft({"legal_entity": self.view.pick_le(self.rng)})

    def some_entity(self, all_share: float) -> str | None:
        """A legal entity, or with probability ``all_share`` None (all of them)."""
        return None if self.rng.random() < all_share else self.view.pick_le(self.rng)

    def entity_or_all(self) -> Draft:
        return self.le_draft({"legal_entity": self.some_entity(0.2)})

    def days_ahead(self, choices: tuple[int, ...]) -> Draft:
        """A legal entity and the next N days (N one of ``choices``), in words or by dates."""
        days = self.rng.choice(choices)
        return self.le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days}, **self.horizon(days)
        )

    def days_threshold(self, choices: tuple[int, ...]) -> Draft:
        """A legal entity and a number of days (one of ``choices``) the question names."""
        days = self.rng.choice(choices)
        return self.le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days}, days=str(days)
        )

    def on_day(self, day: dt.date) -> Draft:
        """A legal entity and one day ("today", "yesterday", ... or its date)."""
        return self.le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "date": _iso(day)}, day=self.day(day)
        )

    def le_draft(self, params: dict[str, Any], **words: str) -> Draft:
        return Draft("", params, {**self.base(params.get("legal_entity")), **words})

    def group(self, kind: str = "customer") -> str:
        return self.rng.choice(
            ("10", "20", "30", "80", "90") if kind == "customer" else ("10", "20", "30", "40", "50")
        )
