"""Harnesses: the agents under test, the runner that puts questions to them, and run records."""

from harnesses._preflight import ModelEndpoint
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

# ``run`` (the sync entry point) stays in harnesses._runner: ``harnesses.run`` is the CLI module.
from harnesses._runner import RunConfig, RunConfigError, RunSummary, run_async
from ledgerbench_core.trajectory import (
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
    "ModelEndpoint",
    "RegistryInfo",
    "RunConfig",
    "RunConfigError",
    "RunManifest",
    "RunSummary",
    "Source",
    "Status",
    "ToolCall",
    "TrajectoryDraft",
    "TrajectoryRecord",
    "Usage",
    "create_harness",
    "harness",
    "run_async",
]
