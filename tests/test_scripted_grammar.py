"""The scripted agent reads every phrasing of every question kind back from the text alone:
the question kind, the party, the legal entity (stated or the default one) and the window."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from harnesses.scripted._agent import understand
from harnesses.scripted._grammar import resolve_window
from synthetic_erp.scenarios import TEMPLATES

TODAY = dt.date(2026, 3, 2)
LES = ["DEMF", "GBSI", "USMF", "USPI"]
SAMPLE_WORDS = {
    "who": "Harbor Textiles Ltd",
    "asof": "as of March 2, 2026",
    "n": "5",
    "days": "30",
    "group_id": "20",
    "rating": "Good",
    "currency": "EUR",
    "release_label": "partially released",
    "agent": "CA003",
    "journal_id": "PJ-0000123",
    "codes": "CHECK and WIRE",
    "status_label": "pending approval",
    "period": "last month",
    "horizon": "in the next 14 days",
    "next_month": "next month",
    "month": "in January 2026",
    "day": "yesterday",
}
PHRASINGS = [(name, i) for name, t in TEMPLATES.items() for i in range(len(t.phrasings))]


@pytest.mark.parametrize(("where", "entity"), [("in DEMF", "DEMF"), ("", "USMF")])
def test_every_phrasing_is_read_back_to_its_kind_party_and_entity(where: str, entity: str) -> None:
    for name, index in PHRASINGS:
        words = {**SAMPLE_WORDS, "where": where}
        if name == "balance_all_entities":
            words["where"] = "across all legal entities"
        text = " ".join(TEMPLATES[name].phrasings[index].format(**words).split())
        text = text.replace(" ?", "?").replace(" .", ".").replace(" ,", ",").replace(" :", ":")
        question, intent = understand(text, TODAY, LES, "USMF")
        assert intent is not None and intent.name == name, (text, intent and intent.name)
        if "{who}" in TEMPLATES[name].phrasings[index]:
            assert question.who == "Harbor Textiles Ltd", text
        if name != "balance_all_entities":
            assert question.legal_entity == entity, text


@pytest.mark.parametrize(
    ("words", "window"),
    [
        ("last month", (dt.date(2026, 2, 1), dt.date(2026, 2, 28))),
        ("this week", (dt.date(2026, 3, 2), dt.date(2026, 3, 8))),
        ("next month", (dt.date(2026, 4, 1), dt.date(2026, 4, 30))),
        ("last quarter", (dt.date(2025, 10, 1), dt.date(2025, 12, 31))),
        ("so far this year", (dt.date(2026, 1, 1), TODAY)),
        ("this month", (dt.date(2026, 3, 1), TODAY)),
        ("over the last 12 months", (dt.date(2025, 3, 3), TODAY)),
        ("in the next 7 days", (TODAY, dt.date(2026, 3, 9))),
        ("by March 16, 2026", (TODAY, dt.date(2026, 3, 16))),
        ("in January 2026", (dt.date(2026, 1, 1), dt.date(2026, 1, 31))),
        ("from May 1, 2025 to June 30, 2025", (dt.date(2025, 5, 1), dt.date(2025, 6, 30))),
    ],
)
def test_relative_windows_resolve_against_the_erps_today(words: str, window) -> None:
    assert resolve_window(words, TODAY) == window


def test_generated_questions_are_read_back_with_their_resolved_parameters(
    erp_db_url: str,
) -> None:
    from synthetic_erp._questions import generate_questions

    dataset = generate_questions(erp_db_url, n=150, seed=random.Random(3).randrange(1000))
    for item in dataset.items:
        resolved = item.metadata["resolved"]
        question, intent = understand(item.query, TODAY, LES, "USMF")
        assert intent is not None and intent.name == item.metadata["template"], item.query
        if resolved["legal_entity"] != "all":
            assert question.legal_entity == resolved["legal_entity"], item.query
        if "start" in resolved:
            assert (question.start, question.end) == (
                dt.date.fromisoformat(resolved["start"]),
                dt.date.fromisoformat(resolved["end"]),
            ), item.query
        if "date" in resolved:
            assert question.single_date == dt.date.fromisoformat(resolved["date"]), item.query
