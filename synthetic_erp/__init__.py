"""Synthetic AR/AP ERP: schema, deterministic generator, FnO importer, statistics and oracle."""

from typing import Any

_EXPORTS = {
    "ENTITY_SETS": "synthetic_erp._catalog",
    "STABLE_RECORD_BASE": "synthetic_erp._catalog",
    "EntitySet": "synthetic_erp._catalog",
    "RecordRef": "synthetic_erp._catalog",
    "entity_set": "synthetic_erp._catalog",
    "parse_record_url": "synthetic_erp._catalog",
    "record_path": "synthetic_erp._catalog",
    "record_resource_uri": "synthetic_erp._catalog",
    "record_url": "synthetic_erp._catalog",
    "GenerationReport": "synthetic_erp._generate",
    "generate_erp": "synthetic_erp._generate",
    "erp_stats": "synthetic_erp._snapshot",
    "snapshot_hash": "synthetic_erp._snapshot",
}


def __getattr__(name: str) -> Any:
    """Exports load on first use: serving the ERP never imports the generator (Faker and the
    scenario tables), which a server start would otherwise pay for on every run."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'synthetic_erp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "ENTITY_SETS",
    "STABLE_RECORD_BASE",
    "EntitySet",
    "GenerationReport",
    "RecordRef",
    "entity_set",
    "erp_stats",
    "generate_erp",
    "parse_record_url",
    "record_path",
    "record_resource_uri",
    "record_url",
    "snapshot_hash",
]
