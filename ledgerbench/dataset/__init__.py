"""The dataset format: question items, assertions, expected facts; loading and validation."""

from ledgerbench.dataset._loader import (
    DatasetError,
    check_dataset_path,
    dataset_hash,
    dataset_to_yaml,
    load_dataset,
    merge_datasets,
    validate_dataset,
    write_dataset,
)
from ledgerbench.dataset._records import (
    DATASET_FORMAT_VERSION,
    Assertion,
    Dataset,
    DatasetHeader,
    Dimension,
    ExpectedFact,
    Money,
    Question,
    TaskType,
)
from ledgerbench.dataset._rubric import RUBRIC_VERSION, build_tags, rubric_version

__all__ = [
    "DATASET_FORMAT_VERSION",
    "RUBRIC_VERSION",
    "Assertion",
    "Dataset",
    "DatasetError",
    "DatasetHeader",
    "Dimension",
    "ExpectedFact",
    "Money",
    "Question",
    "TaskType",
    "build_tags",
    "check_dataset_path",
    "dataset_hash",
    "dataset_to_yaml",
    "load_dataset",
    "merge_datasets",
    "rubric_version",
    "validate_dataset",
    "write_dataset",
]
