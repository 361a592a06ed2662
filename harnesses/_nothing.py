"""The always-"nothing found" baseline (``--harness nothing``): the floor of the benchmark.

It never queries the ERP and answers every question with "nothing found". Its score is what an
agent earns for free on the questions whose right answer is "none", "zero" or "no such party",
so it shows how much of a score is above the floor. Offline, deterministic, no model.
"""

from __future__ import annotations

from harnesses._protocol import (
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    HarnessOptions,
    TrajectoryDraft,
)
from harnesses._registry import harness

NOTHING_FOUND = (
    "I found nothing matching this request: there are no such records, so there is nothing to "
    "report and the amount is zero."
)


class NothingAgent:
    """Answers "nothing found" to every question without looking anything up."""

    name = "nothing"
    conversational = True
    """In conversations it takes part and never answers: every turn is "nothing found"."""
    model_free = True
    """It calls no model: the cost of each answer is a known 0.0."""

    def __init__(self, options: HarnessOptions | None = None) -> None:
        self.options = options or HarnessOptions()
        self.model = None

    async def aclose(self) -> None:
        return None

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        draft.set_answer(NOTHING_FOUND)
        return AgentOutcome(answer=NOTHING_FOUND)


@harness("nothing", options={})
def create_nothing(options: HarnessOptions) -> NothingAgent:
    return NothingAgent(options)
