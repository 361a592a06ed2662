"""Dated events with a sentiment: funding rounds, deals, executive changes, launches, regulatory
actions, rating changes and restructurings, plus funding rumours that a later statement denies."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal

from synthetic_world._calendar import DAY, fiscal_year_of
from synthetic_world._facts import CompanyLedger, Event
from synthetic_world._financials import tenth
from synthetic_world._universe import Company

INVESTORS = (
    "Granite Peak Ventures",
    "Northwind Capital",
    "Bluefield Partners",
    "Harborlight Ventures",
    "Cedar Row Capital",
    "Meridian Growth Fund",
    "Alder Street Ventures",
    "Kestrel Equity",
    "Foxglove Capital",
    "Ironbridge Partners",
    "Lumen Ridge Ventures",
    "Stonebay Growth",
)
ROUNDS = ("Seed", "Series A", "Series B", "Series C", "Series D", "Series E")
REGULATORS = {
    "USA": "the US Trade Practices Commission",
    "DEU": "the German Market Oversight Office",
    "GBR": "the UK Fair Trading Authority",
}
# -- regulatory history (issue 38's regulatory_exposure kind) -----------------------------------
MATTERS = (
    "data protection practices",
    "advertising claims",
    "pricing of service contracts",
    "consumer billing",
    "reporting of product defects",
    "distributor agreements",
    "handling of customer complaints",
)
"""What a regulator investigates (one matter per investigation)."""
PENALTY_ACTIONS = ("fine", "settlement")
"""How a penalised matter ends: the regulator's fine, or a settlement the company agrees to."""
AGENCIES = ("Sterling Ratings", "Northbridge Credit")
RATINGS = ("BB-", "BB", "BB+", "BBB-", "BBB", "BBB+", "A-", "A", "A+")
ROLES = ("Chief Executive Officer",)


class EventsBuilder:
    def __init__(
        self,
        company: Company,
        ledger: CompanyLedger,
        today: dt.date,
        start: dt.date,
        namer: Callable[[str], str],
        targets: list[Company],
    ) -> None:
        self.company = company
        self.ledger = ledger
        self.today = today
        self.start = start
        self.rng = random.Random(f"events:{company.company_id}")
        # Its own stream, so the regulatory history left every earlier event's draw as it was.
        self.regulatory_rng = random.Random(f"regulatory-history:{company.company_id}")
        self.namer = namer
        self.targets = targets
        self._count = 0

    def _date(self, low: dt.date | None = None, high: dt.date | None = None) -> dt.date:
        low, high = low or self.start, high or self.today - DAY * 3
        return low + DAY * self.rng.randint(0, max((high - low).days, 0))

    def _event(self, kind: str, date: dt.date, sentiment: str, headline: str, **fields) -> Event:
        self._count += 1
        event = Event(
            event_id=f"{self.company.company_id}.E{self._count:02d}",
            company_id=self.company.company_id,
            kind=kind,
            date=date,
            sentiment=sentiment,
            headline=headline,
            **fields,
        )
        self.ledger.events.append(event)
        return event

    def build(self, ceo: str) -> None:
        company, rng = self.company, self.rng
        self.ledger.ceo = self.ledger.first_ceo = ceo
        notable = company.kind == "notable"
        if company.listed:
            for _ in range(rng.randint(1, 3) if notable else rng.randint(0, 1)):
                self._launch()
            if rng.random() < (0.45 if notable else 0.2):
                self._ceo_change()
            for _ in range(rng.randint(0, 2) if notable else 0):
                self._acquisition()
            if rng.random() < (0.35 if notable else 0.1):
                self._regulatory()
            self._ratings()
        else:
            self._funding()
            for _ in range(rng.randint(1, 2) if notable else rng.randint(0, 1)):
                self._launch()
            if rng.random() < 0.3:
                self._ceo_change()
        if company.distressed:
            self._restructuring()
        if company.listed:
            self._regulatory_history()
        if not company.listed:
            self._cash_updates()
        self.ledger.events.sort(key=lambda e: (e.date, e.event_id))

    def _launch(self) -> None:
        rng, company = self.rng, self.company
        base = company.short.split()[-1]
        product = (
            rng.choice(self.ledger.products)
            if self.ledger.products
            else (f"{base} {rng.choice(('Nova', 'Atlas', 'Vista', 'Orbit', 'Pulse'))}")
        )
        self._event(
            "product_launch",
            self._date(),
            "positive",
            f"{company.short} launches {product}",
            product=product,
        )

    def _ceo_change(self) -> None:
        company = self.company
        new = self.namer(self.company.region)
        date = self._date(self.start + DAY * 200)
        previous = self.ledger.ceo
        sentiment = "negative" if company.distressed else "neutral"
        self._event(
            "executive_change",
            date,
            sentiment,
            f"{company.short} names {new} chief executive",
            person=new,
            previous_person=previous,
            role=ROLES[0],
        )
        self.ledger.ceo = new

    def _acquisition(self) -> None:
        rng, company = self.rng, self.company
        candidates = [t for t in self.targets if t.company_id != company.company_id]
        target = rng.choice(candidates) if candidates else None
        value = tenth(company.size * rng.uniform(0.03, 0.25))
        name = target.name if target else f"{rng.choice(('Apex', 'Brightline', 'Cobalt'))} Labs"
        self._event(
            "acquisition",
            self._date(),
            rng.choice(("positive", "neutral")),
            f"{company.short} to acquire {name}",
            amount=value,
            currency=company.currency,
            counterparty=target.company_id if target else name,
        )

    def _regulatory(self) -> None:
        rng, company = self.rng, self.company
        regulator = REGULATORS[company.country]
        fine = tenth(max(company.size * rng.uniform(0.001, 0.01), 0.3))
        self._event(
            "regulatory_action",
            self._date(),
            "negative",
            f"{regulator.removeprefix('the ')} fines {company.short}",
            amount=fine,
            currency=company.currency,
            regulator=regulator,
            country=company.country,
        )

    def _regulatory_history(self) -> None:
        """For a share of listed companies, two to five investigations over the years: each
        opened on a day, then closed without a penalty, ended by a fine or a settlement sized
        against that fiscal year's operating income, or still open at today."""
        rng, company = self.regulatory_rng, self.company
        if rng.random() >= (0.55 if company.kind == "notable" else 0.15):
            return
        regulator = REGULATORS[company.country]
        short = regulator.removeprefix("the ")
        matters = rng.sample(MATTERS, rng.randint(2, 5))
        for matter in matters:
            span = (self.today - DAY * 30 - self.start).days
            opened = self.start + DAY * rng.randint(0, max(span, 0))
            self._event(
                "regulatory_investigation",
                opened,
                "negative",
                f"{short} opens investigation into {company.short}",
                regulator=regulator,
                country=company.country,
                matter=matter,
            )
            self._outcome(matter, opened + DAY * rng.randint(60, 420), rng.random())

    def _outcome(self, matter: str, day: dt.date, roll: float) -> None:
        """How an investigation ends on ``day``: closed without a penalty (about a third), a
        fine or a settlement; nothing when ``day`` is not yet past (it is still open)."""
        company, regulator = self.company, REGULATORS[self.company.country]
        short = regulator.removeprefix("the ")
        if day > self.today - DAY * 3:
            return
        where = {"regulator": regulator, "country": company.country, "matter": matter}
        if roll < 0.35:
            headline = f"{short} closes investigation into {company.short}"
            self._event("regulatory_closure", day, "positive", headline, **where)
            return
        action = self.regulatory_rng.choice(PENALTY_ACTIONS)
        headline = (
            f"{short} fines {company.short}"
            if action == "fine"
            else f"{company.short} settles {short} investigation"
        )
        self._event(
            "regulatory_action",
            day,
            "negative",
            headline,
            amount=self._penalty(day),
            currency=company.currency,
            action=action,
            **where,
        )

    def _penalty(self, day: dt.date) -> Decimal:
        """Most penalties are 1-6% of the fiscal year's operating income, some 8-25%."""
        rng = self.regulatory_rng
        fy = fiscal_year_of(self.company.fiscal_year_end_month, day)
        incomes = {
            f.period.fiscal_year: f.value
            for f in self.ledger.facts
            if f.metric == "operating_income" and f.period.annual and f.basis == "GAAP"
        }
        years = sorted(incomes)
        base = incomes.get(fy, incomes[years[-1]] if years else Decimal(0))
        if base <= 0:
            base = Decimal(str(self.company.size)) * Decimal("0.05")
        share = rng.uniform(0.01, 0.06) if rng.random() < 0.7 else rng.uniform(0.08, 0.25)
        return tenth(max(float(base) * share, 0.5))

    def _ratings(self) -> None:
        rng, company = self.rng, self.company
        agency = rng.choice(AGENCIES)
        position = rng.randint(2, len(RATINGS) - 2)
        changes = rng.randint(1, 2)
        dates = sorted(self._date() for _ in range(changes))
        if company.distressed:
            dates = sorted(self._date(self.today - DAY * 500) for _ in range(2))
        for date in dates:
            step = -1 if company.distressed or rng.random() < 0.4 else 1
            new = min(max(position + step, 0), len(RATINGS) - 1)
            if new == position:
                continue
            sentiment = "positive" if new > position else "negative"
            verb = "upgrades" if new > position else "downgrades"
            self._event(
                "rating_change",
                date,
                sentiment,
                f"{agency} {verb} {company.short} to {RATINGS[new]}",
                agency=agency,
                rating_from=RATINGS[position],
                rating_to=RATINGS[new],
            )
            position = new

    def _funding(self) -> None:
        rng, company = self.rng, self.company
        rounds = rng.randint(2, 4)
        first = rng.randint(0, 2)
        dates = sorted(self._date() for _ in range(rounds))
        amount = company.size * rng.uniform(0.2, 0.6)
        valuation = amount * rng.uniform(4, 8)
        for i, date in enumerate(dates):
            name = ROUNDS[min(first + i, len(ROUNDS) - 1)]
            investor = rng.choice(INVESTORS)
            self._event(
                "funding_round",
                date,
                "positive",
                f"{company.short} raises {name} round led by {investor}",
                amount=tenth(amount),
                currency=company.currency,
                round_name=name,
                lead_investor=investor,
                post_money=tenth(valuation),
            )
            amount *= rng.uniform(1.5, 2.6)
            valuation *= rng.uniform(1.6, 2.8)
        if rng.random() < 0.2:
            rumour = self._date(dates[-1] + DAY * 30, self.today - DAY * 60)
            if rumour < self.today - DAY * 60:
                round_name = ROUNDS[min(first + rounds, len(ROUNDS) - 1)]
                self._rumour(rng, rumour, tenth(amount), tenth(valuation * 1.2), round_name)

    def _rumour(
        self, rng: random.Random, day: dt.date, size: Decimal, worth: Decimal, round_name: str
    ) -> None:
        """Reported talks of a round, denied by the company 5 to 40 days later."""
        company = self.company
        event = self._event(
            "funding_rumour",
            day,
            "positive",
            f"{company.short} said to be in talks to raise funding",
            amount=size,
            currency=company.currency,
            post_money=worth,
            status="denied",
            round_name=round_name,
        )
        self._event(
            "rumour_denial",
            day + DAY * rng.randint(5, 40),
            "neutral",
            f"{company.short} denies funding talks",
            refers_to=event.event_id,
        )

    def _cash_updates(self) -> None:
        """Statements of cash on hand and monthly burn by some private companies (a chief
        executive's interview), one to three over the years after their first round, sometimes
        followed by talks of a round the company denies. Their own random stream: every other
        draw of the world is as it was before they existed."""
        company = self.company
        rng = random.Random(f"private-runway:{company.company_id}")
        rounds = [e for e in self.ledger.events if e.kind == "funding_round"]
        if not rounds or rng.random() >= (0.7 if company.kind == "notable" else 0.3):
            return
        low, high = rounds[0].date + DAY * 60, self.today - DAY * 10
        if low >= high:
            return
        days = sorted({low + DAY * rng.randint(0, (high - low).days) for _ in range(3)})
        days = days[-rng.randint(1, 3) :]
        counted = None
        for day in days:
            cash_date = day.replace(day=1) - DAY  # the last month end before the interview
            if counted is not None and cash_date <= counted:
                continue  # two interviews in one month: the first one stands
            counted = cash_date
            raised = [e.amount for e in rounds if e.date <= cash_date and e.amount]
            base = raised[-1] if raised else rounds[0].amount or Decimal(10)
            cash = tenth(float(base) * rng.uniform(0.35, 0.85))
            net = max(tenth(float(cash) / rng.uniform(12, 30)), Decimal("0.1"))
            gross = max(tenth(float(net) * rng.uniform(1.4, 2.2)), net + Decimal("0.1"))
            self._event(
                "cash_update",
                day,
                "neutral",
                f"{company.short} chief executive on cash and burn",
                amount=cash,
                currency=company.currency,
                cash_date=cash_date,
                net_burn=net,
                gross_burn=gross,
            )
        if counted is not None and rng.random() < 0.4:
            last = max(rounds, key=lambda e: e.date)
            start = max(counted + DAY * 10, last.date + DAY * 30)
            if start < self.today - DAY * 60:
                day = start + DAY * rng.randint(0, (self.today - DAY * 60 - start).days)
                size = tenth(float(last.amount or 1) * rng.uniform(1.5, 2.5))
                worth = tenth(float(last.post_money or 1) * rng.uniform(1.6, 2.4))
                position = ROUNDS.index(last.round_name) if last.round_name in ROUNDS else 0
                self._rumour(rng, day, size, worth, ROUNDS[min(position + 1, len(ROUNDS) - 1)])

    def _restructuring(self) -> None:
        rng, company = self.rng, self.company
        share = rng.randint(8, 22)
        self._event(
            "restructuring",
            self._date(self.today - DAY * 400),
            "negative",
            f"{company.short} cuts {share}% of jobs amid falling sales",
            amount=Decimal(share),
        )
