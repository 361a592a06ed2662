"""Customers and everything that hangs off them: AR ledger, settlements, disputes, sales orders
and collections. ``CustomerGenerator.chunk`` turns a slice of customer accounts into documents."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from synthetic_erp._context import Context, PartySpec
from synthetic_erp._ledger import Doc, Order, Settlement, dec, settle
from synthetic_erp._pools import ITEMS, address, email_domain, phone
from synthetic_erp._reference import (
    ACTIVITY_PURPOSES,
    CREDIT_RATINGS,
    CREDIT_TIERS,
    CUSTOMER_GROUPS,
    CUSTOMER_METHODS,
    CUSTOMER_TERMS_WEIGHTS,
    DEDUCTION_REASONS,
    DISCOUNT_BY_CODE,
    DISPUTE_REASONS,
    TERMS_BY_ID,
    USD_VALUE,
    to_accounting,
)

DAY = dt.timedelta(days=1)
BEHAVIOURS = (("prompt", 30), ("average", 40), ("slow", 22), ("bad", 8))
DELAY = {"prompt": (-4, 3), "average": (3, 7), "slow": (18, 12), "bad": (40, 25)}
INVOICE_COUNTS = ((1, 30), (2, 32), (3, 20), (4, 10), (5, 5), (6, 3))
TAX_GROUPS = {"US": ("No-Tax", "TAXABLE", "RESALE"), "DE": ("DOM-DE", "EU"), "GB": ("UK-STD", "EU")}


@dataclass
class CustomerState:
    spec: PartySpec
    row: dict
    behaviour: str
    role: str
    net_days: int
    discount: tuple[int, int] | None  # (percent hundredths, days)
    pool: str | None
    agent: str | None
    docs: list[Doc] = field(default_factory=list)


@dataclass
class ChunkOut:
    """The documents of one chunk before their numbers are assigned."""

    customers: list[CustomerState] = field(default_factory=list)
    docs: list[Doc] = field(default_factory=list)
    settlements: list[Settlement] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    disputes: list[dict] = field(default_factory=list)
    letters: list[dict] = field(default_factory=list)
    cases: list[dict] = field(default_factory=list)
    activities: list[dict] = field(default_factory=list)


class CustomerGenerator:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.rng = ctx.rng

    # ---------------------------------------------------------------------------------- parties

    def make_customer(self, spec: PartySpec) -> CustomerState:
        rng, ctx = self.rng, self.ctx
        le = spec.le
        region = le.region
        currency = ctx.weighted(le.party_currencies)
        terms_id = ctx.weighted(CUSTOMER_TERMS_WEIGHTS)
        terms = TERMS_BY_ID[terms_id]
        discount = None
        if terms[3]:
            code = DISCOUNT_BY_CODE[terms[3]]
            discount = (code[2], code[3])
        group_id = rng.choice(CUSTOMER_GROUPS)[0]
        behaviour = ctx.weighted(BEHAVIOURS)
        role = ctx.weighted((("dormant", 5), ("settled", 7), ("normal", 88)))
        if spec.role:
            role = spec.role
        if rng.random() < 0.88:
            created = ctx.start - DAY * rng.randint(30, 2900)
        else:
            created = ctx.start + DAY * rng.randint(0, 300)
        pool = None
        agent = None
        if spec.role != "no_pool" and rng.random() < 0.9:
            if group_id == "10":
                pool = "KEYACCT"
            else:
                pool = {"prompt": "PASTDUE-30", "average": "PASTDUE-30", "slow": "PASTDUE-90"}.get(
                    behaviour, "SEVERE"
                )
            agent = rng.choice(ctx.agents_by_pool[(le.code, pool)])
        name = spec.name or ctx.namer.name(region)
        first = rng.choice(ctx.pools.regions[region].first_names)
        addr = address(rng, ctx.pools, region)
        row = {
            "legal_entity": le.code,
            "account": spec.account,
            "name": name,
            "group_id": group_id,
            "currency": currency,
            "payment_terms": terms_id,
            "method_of_payment": rng.choice(CUSTOMER_METHODS)[0] if rng.random() < 0.9 else None,
            "credit_limit": None,
            "credit_rating": "Good",
            "credit_hold": False,
            "contact_name": f"{first} {rng.choice(ctx.pools.regions[region].last_names)}",
            "contact_phone": phone(rng, region),
            "contact_email": f"{first.lower()}@{email_domain(name, region)}",
            "address_street": addr.street,
            "address_city": addr.city,
            "address_state": addr.state,
            "address_zip": addr.zip,
            "address_country": addr.country,
            "sales_tax_group": rng.choice(TAX_GROUPS[region]),
            "created_date": created,
            "collections_pool_id": pool,
            "collections_agent_id": agent,
            "derived_fields": "",
        }
        return CustomerState(spec, row, behaviour, role, terms[2], discount, pool, agent)

    # ---------------------------------------------------------------------------------- AR

    def chunk(self, specs: list[PartySpec]) -> ChunkOut:
        out = ChunkOut()
        for spec in specs:
            cust = self.make_customer(spec)
            out.customers.append(cust)
            if cust.role != "dormant":
                self._ledger(cust, out)
                out.docs.extend(cust.docs)
                self._open_orders(cust, out)
            self._credit(cust)
            self._collections(cust, out)
        return out

    def _doc(self, cust: CustomerState, kind: str, date: dt.date, cents: int, **kw) -> Doc:
        ctx = self.ctx
        doc = Doc(
            ctx.next_seq(),
            cust.spec.le.code,
            cust.spec.account,
            kind,
            date,
            cust.row["currency"],
            cents,
            ctx.rate(cust.row["currency"], cust.spec.le.currency, date),
            **kw,
        )
        cust.docs.append(doc)
        return doc

    def _ledger(self, cust: CustomerState, out: ChunkOut) -> None:
        rng, ctx = self.rng, self.ctx
        first = max(ctx.start, cust.row["created_date"])
        span = (ctx.as_of - first).days
        count = ctx.weighted(INVOICE_COUNTS)
        if cust.spec.role == "over_limit":
            count = max(count, 3)
        dates = sorted(first + DAY * rng.randint(0, span) for _ in range(count))
        if cust.spec.role == "discount_expiring":
            cust.discount = (200, 10)
            cust.row["payment_terms"] = "2%10Net30"
            cust.net_days = 30
            dates.append(ctx.as_of - DAY * rng.randint(3, 9))
        for date in dates:
            invoice = self._invoice(cust, date, out)
            self._resolve(cust, invoice, out)
        if cust.role == "settled":
            return
        if rng.random() < 0.04 or cust.spec.role == "unapplied_credit":
            date = max(first, ctx.as_of - DAY * rng.randint(1, 90))
            cents = self._free_amount(cust.row["currency"]) // 4 + 2500
            self._doc(cust, "payment", date, -cents, description="Payment on account, unapplied")
        if rng.random() < 0.05 or cust.spec.role == "unapplied_credit":
            date = max(first, ctx.as_of - DAY * rng.randint(1, 120))
            cents = rng.randint(5000, 200000)
            self._doc(cust, "credit_note", date, -cents, description="Price adjustment credit")
        if cust.behaviour in ("slow", "bad") and rng.random() < 0.15:
            date = max(first, ctx.as_of - DAY * rng.randint(1, 180))
            self._doc(
                cust, "adjustment", date, rng.choice((2500, 5000, 7500, 15000)), due=date,
                description="Late payment fee",
            )  # fmt: skip

    def _free_amount(self, currency: str) -> int:
        usd = math.exp(self.rng.gauss(math.log(3000), 1.0))
        usd = min(max(usd, 50.0), 200000.0)
        return round(usd / USD_VALUE[currency] * 100)

    def _invoice(self, cust: CustomerState, date: dt.date, out: ChunkOut) -> Doc:
        rng = self.rng
        due = date + DAY * cust.net_days
        if rng.random() < 0.65:
            order_date = max(cust.row["created_date"], date - DAY * rng.randint(1, 10))
            order = self._order(cust, order_date, "invoiced", "sales")
            order.requested_date = date
            out.orders.append(order)
            invoice = self._doc(cust, "sales_invoice", date, order.total, due=due)
            invoice.order = order
            invoice.description = f"Sales invoice for order of {len(order.lines)} line(s)"
        else:
            invoice = self._doc(
                cust, "free_text_invoice", date, self._free_amount(cust.row["currency"]), due=due
            )
            invoice.description = rng.choice(
                ("Consulting services", "Installation services", "Maintenance contract",
                 "Freight recharge", "Training services")
            )  # fmt: skip
        if cust.discount:
            percent, days = cust.discount
            invoice.cd_date = date + DAY * days
            invoice.cd_cents = (invoice.cents * percent + 5000) // 10000
        return invoice

    def _order(self, cust: CustomerState, order_date: dt.date, status: str, kind: str) -> Order:
        rng, ctx = self.rng, self.ctx
        order = Order(ctx.next_seq(), cust.spec.le.code, cust.spec.account, cust.row["currency"])
        order.order_type = kind
        order.status = status
        order.order_date = order_date
        order.requested_date = order_date + DAY * rng.randint(3, 30)
        order.release_status = "released" if status in ("delivered", "invoiced") else "open"
        order.taker = rng.choice(ctx.sales_takers[cust.spec.le.code])
        factor = 1.0 / USD_VALUE[cust.row["currency"]]
        big = cust.row["group_id"] in ("10", "30")
        sign = -1 if kind == "return" else 1
        for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
            item_id, description, price = rng.choice(ITEMS)
            unit = max(100, round(price * factor))
            quantity = rng.randint(1, 40 if big else 12)
            if kind == "return":
                quantity = rng.randint(1, 3)
            line = (
                item_id,
                description,
                sign * quantity * 100,
                unit,
                sign * quantity * unit,
                status,
            )
            order.lines.append(line)
        return order

    def _pay_date(self, cust: CustomerState, invoice: Doc) -> dt.date:
        mean, sd = DELAY[cust.behaviour]
        pay = invoice.due + DAY * round(self.rng.gauss(mean, sd))
        if cust.role == "settled":
            pay = min(pay, self.ctx.as_of)
        return max(pay, invoice.date)

    def _payment(self, cust: CustomerState, invoice: Doc, date: dt.date, cents: int, out, disc=0):
        payment = self._doc(cust, "payment", date, -(cents - disc))
        payment.description = "Customer payment"
        settle(out.settlements, invoice, payment, date, cents, disc)
        return payment

    def _resolve(self, cust: CustomerState, invoice: Doc, out: ChunkOut) -> None:
        """Decide how the invoice was paid, disputed or credited up to as_of."""
        rng, as_of = self.rng, self.ctx.as_of
        amount = invoice.cents
        pay = self._pay_date(cust, invoice)
        roll = rng.random()
        if cust.role == "settled":
            roll = 1.0
        elif cust.behaviour == "bad" and roll < 0.3:
            roll = 0.0
        if cust.spec.role == "over_limit":
            roll = 0.0
        if cust.spec.role == "discount_expiring" and invoice.date >= as_of - DAY * 7:
            return
        if roll < 0.07:
            return  # never paid (yet)
        if roll < 0.14:
            if pay <= as_of:
                part = amount * rng.randint(30, 80) // 100
                self._payment(cust, invoice, pay, part, out)
                second = pay + DAY * rng.randint(15, 60)
                if second <= as_of and rng.random() < 0.4:
                    self._payment(cust, invoice, second, invoice.open, out)
            return
        if roll < 0.18:
            if pay <= as_of:
                deduction = max(100, amount * rng.randint(3, 15) // 100)
                self._payment(cust, invoice, pay, amount - deduction, out)
                dispute = self._dispute(invoice, "deduction", deduction, pay, DEDUCTION_REASONS)
                resolved = pay + DAY * rng.randint(10, 40)
                if resolved <= as_of and rng.random() < 0.5:
                    credit = self._doc(cust, "credit_note", resolved, -deduction)
                    credit.description = f"Deduction accepted: {dispute['reason']}"
                    settle(out.settlements, invoice, credit, resolved, deduction)
                    dispute.update(status="resolved", resolved_date=resolved)
                out.disputes.append(dispute)
            return
        if roll < 0.22:
            opened = invoice.date + DAY * rng.randint(5, 25)
            if opened > as_of:
                return
            part = amount if rng.random() < 0.5 else max(100, amount * rng.randint(10, 60) // 100)
            dispute = self._dispute(invoice, "dispute", part, opened, DISPUTE_REASONS)
            resolved = opened + DAY * rng.randint(15, 60)
            if resolved <= as_of and rng.random() < 0.5:
                credit = self._doc(cust, "credit_note", resolved, -part)
                credit.description = f"Dispute settled: {dispute['reason']}"
                settle(out.settlements, invoice, credit, resolved, part)
                if invoice.open:
                    self._payment(cust, invoice, resolved, invoice.open, out)
                dispute.update(status="resolved", resolved_date=resolved)
            out.disputes.append(dispute)
            return
        if roll < 0.27:
            credit_date = invoice.date + DAY * rng.randint(3, 20)
            if credit_date <= as_of:
                self._credit_note(cust, invoice, credit_date, out)
        untouched = invoice.open == invoice.cents
        prompt = cust.behaviour in ("prompt", "average")
        if untouched and invoice.cd_date and prompt and rng.random() < 0.7:
            pay = invoice.date + DAY * rng.randint(0, (invoice.cd_date - invoice.date).days)
            if cust.role == "settled":
                pay = min(pay, as_of)
            if pay <= as_of:
                self._payment(cust, invoice, pay, invoice.open, out, invoice.cd_cents or 0)
            return
        if invoice.open and pay <= as_of:
            self._payment(cust, invoice, max(pay, invoice.last_settled or pay), invoice.open, out)

    def _credit_note(self, cust: CustomerState, invoice: Doc, date: dt.date, out: ChunkOut) -> None:
        rng = self.rng
        order = invoice.order
        if order is not None and rng.random() < 0.5:
            item_id, description, quantity, price, _amount, _status = order.lines[0]
            units = rng.randint(1, max(1, quantity // 200))
            cents = units * price
            if cents <= invoice.open:
                ret_date = max(invoice.date, date - DAY * rng.randint(0, 3))
                ret = self._order(cust, ret_date, "invoiced", "return")
                ret.lines = [(item_id, description, -units * 100, price, -cents, "invoiced")]
                ret.requested_date = date
                out.orders.append(ret)
                credit = self._doc(cust, "credit_note", date, -cents, description="Return credit")
                credit.order = ret
                settle(out.settlements, invoice, credit, date, cents)
                return
        cents = max(100, invoice.open * rng.randint(10, 50) // 100)
        credit = self._doc(cust, "credit_note", date, -cents, description="Credit note: price")
        settle(out.settlements, invoice, credit, date, cents)

    def _dispute(self, invoice: Doc, kind: str, cents: int, opened: dt.date, reasons) -> dict:
        return {
            "invoice": invoice,
            "kind": kind,
            "reason": self.rng.choice(reasons),
            "cents": cents,
            "opened_date": opened,
            "status": "open",
            "resolved_date": None,
        }

    def _open_orders(self, cust: CustomerState, out: ChunkOut) -> None:
        rng, as_of = self.rng, self.ctx.as_of
        first = max(self.ctx.start, cust.row["created_date"])
        for _ in range(self.ctx.weighted(((0, 45), (1, 33), (2, 16), (3, 6)))):
            date = max(first, as_of - DAY * rng.randint(0, 45))
            status = "delivered" if date <= as_of - DAY * 2 and rng.random() < 0.3 else "open"
            order = self._order(cust, date, status, "sales")
            if status == "open" and rng.random() < 0.3:
                order.release_status = "partially_released"
            if status == "open" and rng.random() < 0.06:
                order.do_not_process = True
            out.orders.append(order)
        if rng.random() < 0.15:
            date = first + DAY * rng.randint(0, (as_of - first).days)
            order = self._order(cust, date, "canceled", "sales")
            order.do_not_process = rng.random() < 0.3
            out.orders.append(order)
        if rng.random() < 0.05:
            date = max(first, as_of - DAY * rng.randint(0, 30))
            out.orders.append(self._order(cust, date, rng.choice(("open", "delivered")), "return"))

    # ---------------------------------------------------------------------------------- credit

    def _credit(self, cust: CustomerState) -> None:
        rng, row = self.rng, cust.row
        balance = sum(to_accounting(doc.open, doc.rate) for doc in cust.docs)
        over = cust.spec.role == "over_limit" or (balance > 150000 and rng.random() < 0.06)
        below = [tier for tier in CREDIT_TIERS if tier * 100 < balance]
        if over and (below or balance >= 20000):
            # Below the smallest tier, a forced over-limit customer gets half its balance.
            limit = below[-1] if below else max(100, balance // 200 // 100 * 100)
            row["credit_hold"] = cust.spec.role == "over_limit" or rng.random() < 0.85
            rating = rng.choice(("Fair", "Poor", "Poor"))
        else:
            needed = balance * 13 // 10
            index = next(i for i, tier in enumerate(CREDIT_TIERS) if tier * 100 >= needed)
            index = min(len(CREDIT_TIERS) - 1, index + rng.choice((0, 0, 1, 1, 2)))
            limit = CREDIT_TIERS[index]
            row["credit_hold"] = rng.random() < (0.1 if cust.behaviour == "bad" else 0.01)
            rating = {
                "prompt": ("Excellent", "Excellent", "Good"),
                "average": ("Good", "Good", "Fair", "Excellent"),
                "slow": ("Fair", "Fair", "Poor", "Good"),
                "bad": ("Poor", "Poor", "Fair"),
            }[cust.behaviour]
            rating = rng.choice(rating)
        assert rating in CREDIT_RATINGS
        row["credit_limit"] = dec(limit * 100)
        row["credit_rating"] = rating

    # ---------------------------------------------------------------------------------- collections

    def _collections(self, cust: CustomerState, out: ChunkOut) -> None:
        rng, ctx = self.rng, self.ctx
        as_of = ctx.as_of
        le = cust.spec.le.code
        account = cust.spec.account
        overdue = [d for d in cust.docs if d.open > 0 and d.due is not None and d.due < as_of]
        case = None
        if overdue:
            oldest = min(d.due for d in overdue)
            days = (as_of - oldest).days
            level = 1 if days <= 30 else 2 if days <= 60 else 3 if days <= 90 else 4
            if rng.random() < 0.85:
                sequence = "KEY-ACCOUNT" if cust.row["group_id"] == "10" else "STANDARD"
                for step in range(1, level + 1):
                    sent = oldest + DAY * (7 + 30 * (step - 1) + rng.randint(0, 5))
                    if sent > as_of:
                        break
                    claimed = sum(to_accounting(d.open, d.rate) for d in overdue if d.due < sent)
                    if claimed <= 0:
                        continue
                    out.letters.append(
                        {"le": le, "account": account, "sequence": sequence, "level": step,
                         "sent_date": sent, "cents": claimed}
                    )  # fmt: skip
            if cust.agent and days > 45 and rng.random() < 0.7:
                opened = as_of - DAY * rng.randint(0, min(days - 30, 60))
                case = {
                    "le": le, "account": account, "status": "open", "opened_date": opened,
                    "closed_date": None, "owner": cust.agent, "seq": ctx.next_seq(),
                    "description": f"Collect {len(overdue)} overdue item(s), oldest {days} days",
                }  # fmt: skip
                out.cases.append(case)
        elif cust.agent and cust.docs and rng.random() < 0.08:
            opened = max(cust.row["created_date"], ctx.start) + DAY * rng.randint(0, 200)
            closed = opened + DAY * rng.randint(10, 90)
            out.cases.append(
                {"le": le, "account": account, "status": "closed", "opened_date": opened,
                 "closed_date": min(closed, as_of), "owner": cust.agent, "seq": ctx.next_seq(),
                 "description": "Past-due balance collected"}
            )  # fmt: skip
        if not cust.agent or not (overdue or rng.random() < 0.05):
            return
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(tuple(ACTIVITY_PURPOSES))
            due = as_of + DAY * rng.randint(-21, 21)
            if due < as_of - DAY * 7:
                status = ctx.weighted((("completed", 60), ("open", 25), ("canceled", 15)))
            elif due < as_of:
                status = ctx.weighted((("open", 50), ("in_progress", 20), ("completed", 30)))
            else:
                status = ctx.weighted((("open", 70), ("in_progress", 30)))
            created = min(as_of - DAY * rng.randint(0, 3), due - DAY * rng.randint(1, 14))
            out.activities.append(
                {"le": le, "account": account, "category": "task" if rng.random() < 0.4
                 else "activity", "type": kind, "purpose": rng.choice(ACTIVITY_PURPOSES[kind]),
                 "status": status, "due_date": due, "created_date": created,
                 "owner": cust.agent, "case": case if case and rng.random() < 0.6 else None}
            )  # fmt: skip
