"""Synthetic AR/AP ERP: schema, deterministic generator, FnO importer, statistics and oracle."""

from synthetic_erp._catalog import (
    ENTITY_SETS,
    EntitySet,
    RecordRef,
    entity_set,
    parse_record_url,
    record_path,
    record_url,
)

__all__ = [
    "ENTITY_SETS",
    "EntitySet",
    "RecordRef",
    "entity_set",
    "parse_record_url",
    "record_path",
    "record_url",
]
