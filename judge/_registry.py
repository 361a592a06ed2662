"""Judge registry: ``rules``, any DSPy model string, or a plug-in ``package.module:factory``.

Built-in judges import their heavy dependencies (DSPy) only when created.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from judge._base import Judge

JudgeFactory = Callable[..., Judge]

_FACTORIES: dict[str, JudgeFactory] = {}


class JudgeLoadError(ValueError):
    """A judge name or plug-in path that cannot be loaded; the message says how to fix it."""


def judge(name: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a judge factory under ``name`` (used as ``--judge name``)."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def _rules_factory(**options: Any) -> Judge:
    from judge._rules import RulesJudge

    return RulesJudge(
        erp_db_url=options.get("erp_db_url"),
        world_db=options.get("world_db"),
        name=options.get("name") or "rules",
    )


def _dspy_factory(model: str, **options: Any) -> Judge:
    from judge._dspy_judge import DspyJudge

    return DspyJudge(model, **{k: v for k, v in options.items() if k not in ("erp_db_url", "name")})


def _load_plugin(path: str) -> JudgeFactory:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise JudgeLoadError(
            f"--judge {path!r}: cannot import module {module_name!r} ({error}); "
            "is it on PYTHONPATH?"
        ) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise JudgeLoadError(
            f"--judge {path!r}: module {module_name!r} has no {attribute!r}"
        ) from None


def create_judge(spec: str, **options: Any) -> Judge:
    """Build a judge: ``rules``, a registered name, ``package.module:factory``, or a DSPy model."""
    if spec == "rules":
        return _rules_factory(**options)
    if spec in _FACTORIES:
        return _FACTORIES[spec](**options)
    if ":" in spec and "/" not in spec.split(":", 1)[0]:
        return _load_plugin(spec)(**options)
    if "/" not in spec:
        raise JudgeLoadError(
            f"--judge {spec!r}: use rules, a DSPy model string such as openai/gpt-5.2 or "
            "anthropic/claude-sonnet-4-5, or package.module:factory"
        )
    return _dspy_factory(spec, **options)
