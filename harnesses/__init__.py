"""Harnesses: the agents under test, the runner that puts questions to them, and run records."""

from harnesses._protocol import (
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    ErpEndpoint,
    Harness,
    HarnessOptions,
    TrajectoryDraft,
)
from harnesses._registry import HarnessLoadError, RegistryInfo, create_harness, harness
from harnesses.records import (
    ErrorInfo,
    RunManifest,
    Source,
    Status,
    ToolCall,
    TrajectoryRecord,
    Usage,
)

__all__ = [
    "AgentEnvironment",
    "AgentOutcome",
    "AgentTask",
    "ErpEndpoint",
    "ErrorInfo",
    "Harness",
    "HarnessLoadError",
    "HarnessOptions",
    "RegistryInfo",
    "RunManifest",
    "Source",
    "Status",
    "ToolCall",
    "TrajectoryDraft",
    "TrajectoryRecord",
    "Usage",
    "create_harness",
    "harness",
]
