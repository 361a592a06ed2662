"""The dataset format: question items, assertions, expected facts; loading and validation."""

from ledgerbench.dataset._records import (
    DATASET_FORMAT_VERSION,
    Assertion,
    Dataset,
    DatasetHeader,
    Dimension,
    ExpectedFact,
    Question,
    TaskType,
)

__all__ = [
    "DATASET_FORMAT_VERSION",
    "Assertion",
    "Dataset",
    "DatasetHeader",
    "Dimension",
    "ExpectedFact",
    "Question",
    "TaskType",
]
