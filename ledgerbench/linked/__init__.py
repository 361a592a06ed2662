"""Moved to :mod:`judge.linked`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from judge.linked import (
    MAX_READ_PER_TRIAL,
    ErpRecordLinks,
    LinkAdapter,
    LinkedItem,
    LinkedItemStore,
    RunLinks,
    RunSources,
    TrialLinks,
    TrialTexts,
    WorldDocumentLinks,
    default_adapters,
    document_key,
    fetched_documents,
    record_key,
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
    "WorldDocumentLinks",
    "default_adapters",
    "document_key",
    "fetched_documents",
    "record_key",
]
