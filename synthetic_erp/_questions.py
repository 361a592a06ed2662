"""Obligation questions generated from an ERP, with answer keys from the oracle.

``generate_questions(db_url, n=100, seed=42)`` plans ``n`` items over the 21 published scenarios (at
least 3 each when n >= 63, AR:AP about 72:28), picks entities and parameters with a seeded RNG,
phrases each question in one of several ways, and asks the template's scenario module
(:mod:`synthetic_erp.scenarios`) for the key.
About a quarter of the items have "none", "zero" or "no such customer" as the right answer. The
same database and seed always give the same file, byte for byte.

CLI (dispatched by ``python -m synthetic_erp questions``)::

    python -m synthetic_erp questions --db sqlite:///erp.db --n 100 --seed 42 \\
        --out datasets/obligations.yaml
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from ledgerbench_core.dataset._loader import write_dataset
from ledgerbench_core.dataset._records import Dataset, DatasetHeader, Question, TaskType
from ledgerbench_core.dataset._rubric import RUBRIC_VERSION, build_tags
from synthetic_erp._catalog import parse_record_url
from synthetic_erp._db import ErpDatabaseError, open_engine, read_meta
from synthetic_erp.scenarios import TEMPLATES, Answer, OracleContext, answer_question, scenarios
from synthetic_erp.scenarios._drafting import Chooser, Draft, ErpView

# Published scenario weights (items per 100): the default mix.
SCENARIO_WEIGHTS: dict[str, int] = {
    "Aged Balance": 15,
    "Sales Orders": 10,
    "Customer Setup": 8,
    "Payment History": 7,
    "Vendor Balance": 7,
    "Invoicing History": 7,
    "Credit Limit": 6,
    "AP Invoices": 6,
    "Vendors": 6,
    "AP Payments": 5,
    "Collections Tasks": 5,
    "Collections": 4,
    "Cash Discounts": 3,
    "Other": 3,
    "Outstanding Balance": 2,
    "AP Purchase Orders": 1,
    "Cash Collections": 1,
    "Credit Notes": 1,
    "Dispute": 1,
    "Credit Rating": 1,
    "Discounts": 1,
}
AR_SHARE = 0.72
MIN_PER_SCENARIO = 3
NONE_TARGET = 0.25
"""Share of items planned to have a none / zero / no-such-entity answer (the issue asks >= 20%)."""

# --------------------------------------------------------------------------------------------------
# Planning and assembly
# --------------------------------------------------------------------------------------------------


def plan_counts(n: int) -> dict[str, int]:
    """Items per scenario: proportional to the published weights, at least MIN_PER_SCENARIO each
    when n allows, AR:AP about 72:28."""
    segments = scenarios()
    n_ar = round(n * AR_SHARE)
    counts: dict[str, int] = {}
    for segment, total in (("AR", n_ar), ("AP", n - n_ar)):
        names = [name for name in SCENARIO_WEIGHTS if segments[name] == segment]
        counts.update(_apportion(names, total))
    return counts


def _apportion(names: list[str], total: int) -> dict[str, int]:
    """Largest-remainder apportionment of ``total`` over ``names`` with a floor per scenario."""
    floor = min(MIN_PER_SCENARIO, total // len(names)) if names else 0
    fixed: set[str] = set()
    while True:
        free = [name for name in names if name not in fixed]
        budget = total - floor * len(fixed)
        weight = sum(SCENARIO_WEIGHTS[name] for name in free)
        shares = {name: budget * SCENARIO_WEIGHTS[name] / weight for name in free}
        small = {name for name, share in shares.items() if share < floor}
        if not small:
            break
        fixed |= small
    counts = {name: floor if name in fixed else math.floor(shares[name]) for name in names}
    left = total - sum(counts.values())
    by_remainder = sorted(shares, key=lambda name: (-(shares[name] - counts[name]), name))
    for name in by_remainder[:left]:
        counts[name] += 1
    return counts


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _canonical(template: str, params: dict[str, Any]) -> str:
    return template + "|" + "|".join(f"{k}={params[k]}" for k in sorted(params))


def generated_or_said(generate: Callable[..., Dataset], args: argparse.Namespace) -> Dataset | None:
    """``generate(args.db, n=args.n, seed=args.seed)``, or None after one line on stderr saying
    why the ERP cannot serve it (the command then exits 2)."""
    try:
        return generate(args.db, n=args.n, seed=args.seed)
    except (ErpDatabaseError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except KeyError as exc:
        print(
            f"error: {args.db} is not a generated ERP (missing {exc}); create one with: "
            f"python -m synthetic_erp generate --db {args.db}",
            file=sys.stderr,
        )
    return None


def draw_from_erp(
    db_url: str, draw: Callable[[OracleContext], list[Question]]
) -> tuple[dict[str, str], list[Question]]:
    """The snapshot facts of the ERP at ``db_url`` and ``draw(ctx)`` on an oracle over it (the
    ERP opened read-only, and closed after)."""
    engine = open_engine(db_url, read_only=True)
    try:
        meta = read_meta(engine)
        ctx = OracleContext.open(engine)
        try:
            return meta, draw(ctx)
        finally:
            ctx.close()
    finally:
        engine.dispose()


def erp_size(meta: dict[str, str]) -> dict[str, int]:
    """The ERP's size as a dataset header records it (``erp_customers``, ``erp_vendors``), from
    its ``erp_meta``; empty when the ERP does not say."""
    sizes = {"erp_customers": meta.get("customers"), "erp_vendors": meta.get("vendors")}
    return {key: int(value) for key, value in sizes.items() if value}


def generate_questions(db_url: str, n: int = 100, seed: int = 42) -> Dataset:
    """``n`` obligation questions with answer keys computed from the ERP at ``db_url``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    meta, items = draw_from_erp(db_url, lambda ctx: _generate_items(ctx, n, seed))
    header = DatasetHeader(
        name="obligations",
        description=f"{n} financial-obligation questions generated from the synthetic ERP "
        f"(as of {meta.get('as_of')}); answer keys computed by synthetic_erp.scenarios.",
        erp_snapshot_hash=meta.get("snapshot_hash"),
        generator_seed=seed,
        **erp_size(meta),
        rubric_version=RUBRIC_VERSION,
        created_by=f"python -m synthetic_erp questions --n {n} --seed {seed}",
    )
    return Dataset(header=header, items=items)


def _generate_items(ctx: OracleContext, n: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    view = ErpView(ctx)
    chooser = Chooser(view, rng)
    slots = [name for name, count in plan_counts(n).items() for _ in range(count)]
    rng.shuffle(slots)
    templates_by_scenario: dict[str, list[str]] = defaultdict(list)
    for name, template in TEMPLATES.items():
        templates_by_scenario[template.scenario].append(name)
    cursor: dict[str, int] = {
        name: rng.randrange(len(t)) for name, t in sorted(templates_by_scenario.items())
    }
    seen: set[str] = set()
    numbering: Counter = Counter()
    uses: Counter = Counter()
    phrasing_offset = rng.randrange(6)
    items: list[Question] = []
    nones = 0
    for index, scenario in enumerate(slots):
        want_none = nones < NONE_TARGET * (index + 1)
        options = templates_by_scenario[scenario]
        start = cursor[scenario]
        cursor[scenario] += 1
        # A template whose parameters are used up gives way to the next one of its scenario;
        # only when all are used up does a question repeat (in other words).
        for attempt in range(len(options)):
            template = options[(start + attempt) % len(options)]
            chosen = _choose(ctx, chooser, template, want_none, seen, allow_repeat=False)
            if chosen:
                break
        else:
            template = options[start % len(options)]
            chosen = _choose(ctx, chooser, template, want_none, seen, allow_repeat=True)
        draft, answer = chosen
        nones += answer.is_none
        numbering[scenario] += 1
        # Phrasings rotate per template so every template's wordings all get used.
        phrasing = (phrasing_offset + uses[draft.template]) % len(
            TEMPLATES[draft.template].phrasings
        )
        uses[draft.template] += 1
        items.append(_question(ctx, draft, answer, scenario, numbering[scenario], phrasing))
    return items


def _choose(
    ctx: OracleContext,
    chooser: Chooser,
    template: str,
    want_none: bool,
    seen: set[str],
    *,
    allow_repeat: bool,
) -> tuple[Draft, Answer] | None:
    """A fresh (draft, answer) for ``template``, preferring the wanted answer kind; None when
    every proposal repeats an earlier question and ``allow_repeat`` is False."""
    fallback: tuple[Draft, Answer] | None = None
    for draft in chooser.proposals(template, want_none):
        key = _canonical(template, draft.params)
        if key in seen:
            continue
        answer = answer_question(ctx, template, draft.params)
        if fallback is None:
            fallback = (draft, answer)
        if answer.is_none == want_none:
            seen.add(key)
            return draft, answer
    if fallback is None:  # every proposal was a repeat: ask it again in other words
        if not allow_repeat:
            return None
        draft = next(iter(chooser.proposals(template, want_none)))
        fallback = (draft, answer_question(ctx, template, draft.params))
    seen.add(_canonical(template, fallback[0].params))
    return fallback


def _reference_check(draft: Draft) -> tuple[str | None, str | None]:
    """(name as the question gives it, the record it means) for references worth a check."""
    if draft.reference_mode == "nonexistent":
        return draft.words["who"], None
    if draft.reference_mode in ("misspelled", "partial") and draft.party:
        return draft.words["who"], f"{draft.party.name} ({draft.party.account})"
    return None, None


RELATIVE_WORDS = re.compile(
    r"\b(today|tomorrow|yesterday|right now|at the moment|this (?:week|month|year)|"
    r"(?:next|last|past) (?:\d+ days|12 months|month|quarter|year)|so far this|year to date|"
    r"(?:this|current) fiscal year|fiscal year to date)\b",
    re.I,
)
"""Words that only mean something against the ERP's frozen today (erp_info reports it)."""


def _resolved(ctx: OracleContext, draft: Draft) -> dict[str, Any]:
    """What the question's words were resolved to: the as-of date, the legal entity and any
    window, so graders see what was meant."""
    resolved: dict[str, Any] = {"as_of": ctx.today.isoformat()}
    resolved["legal_entity"] = draft.params.get("legal_entity") or "all"
    for key in ("start", "end", "date"):
        if key in draft.params:
            resolved[key] = draft.params[key]
    if "days" in draft.words and "horizon" in draft.words:
        resolved["start"] = ctx.today.isoformat()
        resolved["end"] = (ctx.today + dt.timedelta(days=int(draft.words["days"]))).isoformat()
    return resolved


def _question(
    ctx: OracleContext,
    draft: Draft,
    answer: Answer,
    scenario: str,
    number: int,
    phrasing_index: int,
) -> Question:
    template = TEMPLATES[draft.template]
    query = TEMPLATES[draft.template].phrasings[phrasing_index].format(**draft.words)
    query = re.sub(r"\s+", " ", query).strip()
    query = re.sub(r" ([?.,:])", r"\1", query)
    given, resolved = _reference_check(draft)
    tags = build_tags(
        TaskType.obligations,
        scenario=scenario,
        records=answer.records,
        ground_truth=answer.text,
        segment=template.segment,
        given_name=given,
        resolved_name=resolved,
    )
    legal_entity = draft.params.get("legal_entity")
    metadata: dict[str, Any] = {
        "template": draft.template,
        "params": draft.params,
        "phrasing": phrasing_index,
        "answer_kind": "none" if answer.is_none else "records",
        "resolved": _resolved(ctx, draft),
        "relative_dates": bool(RELATIVE_WORDS.search(query)),
        "legal_entity_stated": legal_entity is None or legal_entity in query,
    }
    if draft.reference_mode:
        metadata["reference"] = draft.reference_mode
    return Question(
        id=f"obl-{_slug(scenario)}-{number:03d}",
        query=query,
        task_type=TaskType.obligations,
        segment=template.segment,
        scenario=scenario,
        as_of=ctx.today,
        legal_entity=draft.params.get("legal_entity"),
        tags=tags,
        ground_truth=answer.text,
        expected=answer.facts,
        # Keys the catalogue cannot address (e.g. terms ids with '%') are left out: nobody could
        # cite them.
        record_refs=[ref for ref in dict.fromkeys(answer.refs) if parse_record_url(ref)],
        metadata=metadata,
    )


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of a usage dump."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m synthetic_erp questions",
        description="Generate obligation questions with computed answer keys from an ERP.",
        epilog="example:\n  python -m synthetic_erp questions --db sqlite:///erp.db --n 100 "
        "--seed 42 --out datasets/obligations.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db",
        default="sqlite:///erp.db",
        help="ERP database URL (default sqlite:///erp.db), e.g. postgresql://u:p@host/erp",
    )
    parser.add_argument(
        "--n", type=int, default=100, help="number of questions (default 100), e.g. --n 1000"
    )
    parser.add_argument(
        "--seed", type=int, default=42, help="random seed for the choice of questions (default 42)"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="output YAML file (default datasets/obligations.yaml, or datasets/operations.yaml "
        "with --task-type operations)",
    )
    parser.add_argument(
        "--task-type",
        choices=("obligations", "operations"),
        default="obligations",
        help="obligations (one-shot questions, default) or operations (conversations with a "
        "simulated user), e.g. --task-type operations --n 20",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.n < 1:
        print(f"error: --n must be at least 1, got {args.n}", file=sys.stderr)
        return 2
    if args.task_type == "operations":
        from synthetic_erp._operations import main as operations_main

        args.out = args.out or "datasets/operations.yaml"
        return operations_main(args)
    args.out = args.out or "datasets/obligations.yaml"
    dataset = generated_or_said(generate_questions, args)
    if dataset is None:
        return 2
    path = write_dataset(dataset, args.out)
    nones = sum(item.metadata.get("answer_kind") == "none" for item in dataset.items)
    print(f"wrote {len(dataset.items)} questions ({nones} with none/zero answers) to {path}")
    return 0
