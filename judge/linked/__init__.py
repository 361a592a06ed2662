"""Carried copies of linked items (ERP records, research-world documents): pages that open
every link offline.

An adapter per kind of item (:class:`LinkAdapter`) finds its links and copies the items; the
store (:class:`LinkedItemStore`) keeps each copy once. The viewer and the grading packet use it.
"""

from judge.linked._erp import ErpRecordLinks, record_key
from judge.linked._store import (
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
from judge.linked._world import WorldDocumentLinks, document_key, fetched_documents

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
    "WorldDocumentLinks",
    "default_adapters",
    "document_key",
    "fetched_documents",
    "record_key",
]
