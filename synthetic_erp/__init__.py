"""Synthetic AR/AP ERP: schema, deterministic generator, FnO importer, statistics and oracle."""

from synthetic_erp._catalog import (
    ENTITY_SETS,
    STABLE_RECORD_BASE,
    EntitySet,
    RecordRef,
    entity_set,
    parse_record_url,
    record_path,
    record_resource_uri,
    record_url,
)
from synthetic_erp._generate import GenerationReport, generate_erp
from synthetic_erp._snapshot import erp_stats, snapshot_hash

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
