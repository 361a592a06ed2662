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


class Context:
    def __init__(
        self,
        seed: int,
        as_of: dt.date,
        pools: Pools,
        rates: dict[tuple[str, str], dict[dt.date, int]],
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
                for _ in range(2):
                    number += 1
                    agent_id = f"CA{number:03d}"
                    person = next(people)
                    email = person.lower().replace(" ", ".").replace("'", "") + "@contoso.example"
                    self.agents[le.code].append((agent_id, person, email, pool_id))
                    ids.append(agent_id)
                self.agents_by_pool[(le.code, pool_id)] = ids
            self.sales_takers[le.code] = [next(people) for _ in range(8)]
            self.buyers[le.code] = [next(people) for _ in range(6)]
            self.approvers[le.code] = [next(people) for _ in range(4)]

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
