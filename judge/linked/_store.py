"""Carried copies of what runs link to, so a viewer page or a grading packet opens every link
offline, with the server stopped, any day later.

A *linked item* is anything an answer cites or a tool output names by a link: ERP records today
(``https://erp.ledgerbench.test/erp/USMF/customers/SYNCUS-0001``, ``erp://USMF/...``),
research-world documents (``https://world.ledgerbench.test/<world>/docs/<doc>``). Each kind
has a :class:`LinkAdapter` that finds its links in text and copies the items from the run's sources;
:class:`LinkedItemStore` collects the copies of many runs, each stored once, as plain JSON that
the pages render with one generic renderer (title, fields, tables, related links, body text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

MAX_READ_PER_TRIAL = 10
"""Items a trial only read (named in tool outputs, not cited) carried per trial; a listing tool
can name hundreds, and the cited ones are always carried."""


@dataclass
class LinkedItem:
    """One carried copy, in the shape every page renders."""

    kind: str
    """The adapter's kind, e.g. ``erp-record``."""
    key: str
    """The item's canonical key within its kind, e.g. ``/erp/USMF/customers/SYNCUS-0001``."""
    link: str
    """The stable link the item is cited by."""
    title: str
    source: str
    """Where the copy comes from, e.g. ``ERP snapshot 950bdf278781 (sqlite:///...)``."""
    fields: list[list[str]] = field(default_factory=list)
    """``[name, value]`` pairs."""
    sections: list[dict[str, Any]] = field(default_factory=list)
    """Tables: ``{"title", "columns", "rows"}`` with rows as lists of strings."""
    related: list[dict[str, str]] = field(default_factory=list)
    """``{"label", "link"}``: links to other items (open offline when those are carried too)."""
    body: str | None = None
    """Text of a document (markdown), for kinds that have one."""


@dataclass
class RunSources:
    """What an adapter may read to copy one run's items."""

    run_dir: Path
    manifest: Any | None
    """The run's ``RunManifest`` (None when unreadable)."""
    tool_outputs: list[str]
    """Every tool output of the run: the copy of last resort is what the agent was shown."""
    erp_db: str | None = None
    """An ERP database given by the user instead of the one the manifest names."""
    world_db: str | None = None
    """A research-world file given by the user instead of the one the manifest names."""


class LinkAdapter(Protocol):
    """One kind of linked item (ERP records, world documents): one such class each.

    An adapter may also define ``shown(trial) -> {link: key}``, the items the trial read (by
    default the links :meth:`find` sees in its tool outputs), and ``max_read``, how many of those
    are carried per trial (default :data:`MAX_READ_PER_TRIAL`; None: all).
    """

    kind: str

    def find(self, text: str) -> dict[str, str]:
        """Links of this kind in ``text``: {link as written: item key}."""
        ...

    def copy(
        self, run: RunSources, cited: set[str], read: set[str]
    ) -> tuple[str, dict[str, LinkedItem], list[str]]:
        """(id of the data the copies come from, {key: copy}, warnings) for the keys the run's
        answers cite and those its tools only showed; keys it cannot copy are left out."""
        ...


@dataclass
class TrialLinks:
    cited: list[str] = field(default_factory=list)
    """Ids of the items the answer cites, in the order cited."""
    read: list[str] = field(default_factory=list)
    """Ids of the items tool outputs named that the answer does not cite."""
    cited_read: list[str] = field(default_factory=list)
    """Ids of the cited items that tool outputs named too: the agent read what it cited."""
    not_carried: int = 0
    """Items read beyond :data:`MAX_READ_PER_TRIAL`, or that no source could copy."""
    aliases: dict[str, str] = field(default_factory=dict)
    """The trial's links as written (answer and tool outputs) -> the id of their copy."""


@dataclass
class RunLinks:
    aliases: dict[str, str] = field(default_factory=dict)
    """Every link as written in the run's answers and tool outputs -> the id of its copy."""
    trials: dict[tuple[str, int], TrialLinks] = field(default_factory=dict)


@dataclass
class TrialTexts:
    key: tuple[str, int]
    """(question id, trial)."""
    answer: str
    tool_outputs: Sequence[str]
    fetched: Sequence[str] = ()
    """Links of the research-world documents the trial's fetch calls read (ToolCall.documents)."""


def default_adapters() -> list[LinkAdapter]:
    from judge.linked._erp import ErpRecordLinks
    from judge.linked._world import WorldDocumentLinks

    return [ErpRecordLinks(), WorldDocumentLinks()]


def _shown(adapter: LinkAdapter, trial: TrialTexts) -> dict[str, str]:
    """What the trial read of the adapter's kind: {link as written: item key}."""
    if hasattr(adapter, "shown"):
        return adapter.shown(trial)
    shown: dict[str, str] = {}
    for output in trial.tool_outputs:
        shown.update(adapter.find(output))
    return shown


class LinkedItemStore:
    """Copies of the items many runs link to; each (kind, source, key) is stored once."""

    def __init__(self, adapters: Iterable[LinkAdapter] | None = None) -> None:
        self.adapters = list(adapters) if adapters is not None else default_adapters()
        self.items: dict[str, dict[str, Any]] = {}

    def add_run(self, run: RunSources, trials: Iterable[TrialTexts]) -> tuple[RunLinks, list[str]]:
        """Find and copy what the run's trials cite and read; returns the run's link map."""
        trials = list(trials)
        links = RunLinks()
        warnings: list[str] = []
        for adapter in self.adapters:
            warnings += self._add_kind(adapter, run, trials, links)
        return links, warnings

    def _add_kind(
        self, adapter: LinkAdapter, run: RunSources, trials: list[TrialTexts], links: RunLinks
    ) -> list[str]:
        # What each trial cites and (capped) reads, decided before anything is copied.
        plan, cited_read = {}, {}
        cap = getattr(adapter, "max_read", MAX_READ_PER_TRIAL)
        for trial in trials:
            texts = adapter.find(trial.answer)
            cited = list(dict.fromkeys(texts.values()))
            shown = _shown(adapter, trial)
            cited_set = set(cited)
            read = [key for key in dict.fromkeys(shown.values()) if key not in cited_set]
            overflow = 0 if cap is None else max(0, len(read) - cap)
            plan[trial.key] = ({**shown, **texts}, cited, read[:cap], overflow)
            cited_read[trial.key] = [key for key in cited if key in set(shown.values())]
        all_cited = {key for _, cited, _, _ in plan.values() for key in cited}
        all_read = {key for _, _, read, _ in plan.values() for key in read} - all_cited
        if not all_cited and not all_read:
            return []
        source, copies, warnings = adapter.copy(run, all_cited, all_read)
        ids = {key: f"{adapter.kind}:{source}:{key}" for key in copies}
        for key, item in copies.items():
            self.items.setdefault(ids[key], dict(vars(item)))  # JSON-ready as it is
        for trial_key, (texts, cited, read, overflow) in plan.items():
            entry = links.trials.setdefault(trial_key, TrialLinks())
            entry.cited += [ids[key] for key in cited if key in ids]
            entry.read += [ids[key] for key in read if key in ids]
            entry.cited_read += [ids[key] for key in cited_read[trial_key] if key in ids]
            entry.not_carried += overflow + sum(key not in ids for key in (*cited, *read))
            kept = set(cited) | set(read)
            for text, key in texts.items():
                if key in kept and key in ids:
                    entry.aliases[text] = ids[key]
                    links.aliases[text] = ids[key]
        return warnings

    def used(self, runs: Iterable[RunLinks]) -> dict[str, dict[str, Any]]:
        """The copies the given runs' trials list, by id."""
        keep = {
            item
            for run in runs
            for trial in run.trials.values()
            for item in (*trial.cited, *trial.read)
        }
        return {item_id: self.items[item_id] for item_id in sorted(keep) if item_id in self.items}
