"""Carried copies of linked items (ERP records today): pages that open every link offline.

An adapter per kind of item (:class:`LinkAdapter`) finds its links and copies the items; the
store (:class:`LinkedItemStore`) keeps each copy once. The viewer and the grading packet use it.
"""

from ledgerbench.linked._erp import ErpRecordLinks, record_key
from ledgerbench.linked._store import (
    MAX_READ_PER_TRIAL,
    LinkAdapter,
    LinkedItem,
    LinkedItemStore,
    RunLinks,
    RunSources,
    TrialLinks,
    TrialTexts,
    default_adapters,
)

__all__ = [
    "MAX_READ_PER_TRIAL",
    "ErpRecordLinks",
    "LinkAdapter",
    "LinkedItem",
    "LinkedItemStore",
    "RunLinks",
    "RunSources",
    "TrialLinks",
    "TrialTexts",
    "default_adapters",
    "record_key",
]
