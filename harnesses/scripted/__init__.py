"""The scripted agent (``--harness scripted``): a tool-sufficiency baseline, not an agent model.

It knows the question generator's grammar (the phrasings in :mod:`synthetic_erp.scenarios`) and
answers each generated question from its text alone by calling the ERP's MCP tools; its accuracy
shows that every question can be answered through the tools. One solver module per scenario, next
to the scenario module that phrases and keys the same questions.
"""

from harnesses.scripted._agent import ScriptedAgent, create_scripted, match_intent
from harnesses.scripted._base import Question, name_candidates

__all__ = ["Question", "ScriptedAgent", "create_scripted", "match_intent", "name_candidates"]
