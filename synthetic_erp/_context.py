"""Shared state of one generation: the random stream, dates, rates, pools and people."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import random
from dataclasses import dataclass

from synthetic_erp._pools import CompanyNamer, Pools
from synthetic_erp._reference import COLLECTIONS_POOLS, LEGAL_ENTITIES, LegalEntitySpec


@dataclass(frozen=True)
class PartySpec:
    """A customer or vendor account to generate, with an optional forced name and edge-case role."""

    le: LegalEntitySpec
    account: str
    name: str | None = None
    role: str | None = None


AGENTS_PER_POOL_AT_1X = 2
CUSTOMERS_PER_POOL_SEAT = 500  # each pool of each legal entity: one agent per 500 customers


def agents_per_pool(customers: int) -> int:
    """Collections agents in each pool of each legal entity for ``customers`` customers.

    Staff grow with the customer book, as a real collections department's does: with a fixed
    eight agents per legal entity, an agent's day at 100x averaged 30 times the activities of
    one at 1x (47 against 1.5 at seed 42).
    """
    return max(AGENTS_PER_POOL_AT_1X, round(customers / CUSTOMERS_PER_POOL_SEAT))


def _email(person: str, suffix: str = "") -> str:
    """An employee's address, e.g. ``jane.o.brien.12@contoso.example`` (``suffix`` ``.12``)."""
    return person.lower().replace(" ", ".").replace("'", "") + suffix + "@contoso.example"


def _new_name(
    rng: random.Random, first: tuple[str, ...], last: tuple[str, ...], taken: set[str]
) -> str:
    for _ in range(50):
        name = f"{rng.choice(first)} {rng.choice(last)}"
        if name not in taken:
            taken.add(name)
            return name
    return name  # a crowded pool repeats a name; ids and emails stay unique


class Context:
    def __init__(
        self,
        seed: int,
        as_of: dt.date,
        pools: Pools,
        rates: dict[tuple[str, str], dict[dt.date, int]],
        customers: int = 1000,
    ) -> None:
        self.rng = random.Random(seed)
        self.as_of = as_of
        self.start = as_of - dt.timedelta(days=365)
        self.pools = pools
        self.rates = rates
        self.namer = CompanyNamer(random.Random(seed * 7919 + 1), pools)
        self._seq = itertools.count(1)
        self._cumulative: dict[int, tuple[tuple, list[float]]] = {}
        people = iter(pools.employee_names)
        self.agents: dict[str, list[tuple[str, str, str, str]]] = {}
        self.agents_by_pool: dict[tuple[str, str], list[str]] = {}
        self.sales_takers: dict[str, list[str]] = {}
        self.buyers: dict[str, list[str]] = {}
        self.approvers: dict[str, list[str]] = {}
        for le in LEGAL_ENTITIES:
            self.agents[le.code] = []
            number = 0
            for pool_id, _name, _description in COLLECTIONS_POOLS:
                ids = []
                for _ in range(AGENTS_PER_POOL_AT_1X):
                    number += 1
                    agent_id = f"CA{number:03d}"
                    person = next(people)
                    self.agents[le.code].append((agent_id, person, _email(person), pool_id))
                    ids.append(agent_id)
                self.agents_by_pool[(le.code, pool_id)] = ids
            self.sales_takers[le.code] = [next(people) for _ in range(8)]
            self.buyers[le.code] = [next(people) for _ in range(6)]
            self.approvers[le.code] = [next(people) for _ in range(4)]
        self._hire_more_agents(seed, agents_per_pool(customers) - AGENTS_PER_POOL_AT_1X)

    def _hire_more_agents(self, seed: int, extra_per_pool: int) -> None:
        """Add ``extra_per_pool`` agents to every pool, numbered after the default eight of each
        legal entity and named from their own random stream, so an ERP of the default size is
        the same as before staff grew with the customer book."""
        if extra_per_pool <= 0:
            return
        namer = random.Random(seed * 104729 + 17)
        region = self.pools.regions["US"]
        taken = {person for staff in self.agents.values() for _id, person, _e, _p in staff}
        for le in LEGAL_ENTITIES:
            number = len(self.agents[le.code])
            for _ in range(extra_per_pool):
                for pool_id, _name, _description in COLLECTIONS_POOLS:
                    number += 1
                    person = _new_name(namer, region.first_names, region.last_names, taken)
                    agent_id = f"CA{number:03d}"
                    email = _email(person, f".{number}")
                    self.agents[le.code].append((agent_id, person, email, pool_id))
                    self.agents_by_pool[(le.code, pool_id)].append(agent_id)

    def next_seq(self) -> int:
        return next(self._seq)

    def weighted(self, pairs: tuple[tuple[object, float], ...]):
        """One value of ``pairs`` ((value, weight), ...) drawn by weight."""
        cached = self._cumulative.get(id(pairs))
        if cached is None or cached[0] is not pairs:
            cumulative = list(itertools.accumulate(weight for _value, weight in pairs))
            cached = (pairs, cumulative)
            self._cumulative[id(pairs)] = cached
        cumulative = cached[1]
        index = bisect.bisect_right(cumulative, self.rng.random() * cumulative[-1])
        return pairs[min(index, len(pairs) - 1)][0]

    def rate(self, currency: str, accounting: str, date: dt.date) -> int:
        """Micro-unit rate of ``currency`` into ``accounting`` on ``date`` (1.0 when equal)."""
        if currency == accounting:
            return 1_000_000
        return self.rates[(currency, accounting)][date]
