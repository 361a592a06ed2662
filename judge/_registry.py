"""Judge registry: ``rules``, any DSPy model string, or a plug-in ``package.module:factory``.

Built-in judges import their heavy dependencies (DSPy) only when created.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
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


_NEEDS_DSPY = (
    "--judge {model}: the LLM judge needs dspy, an optional extra: install it with "
    "pip install 'ledgerbench[llm]' (or make test), or use --judge rules"
)


def _dspy_factory(model: str, **options: Any) -> Judge:
    if importlib.util.find_spec("dspy") is None:
        raise JudgeLoadError(_NEEDS_DSPY.format(model=model))
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


def _is_plugin(spec: str) -> bool:
    return ":" in spec and "/" not in spec.split(":", 1)[0]


def _not_a_judge(spec: str) -> JudgeLoadError:
    close = difflib.get_close_matches(spec, ["rules", *_FACTORIES], n=1, cutoff=0.6)
    meant = f"did you mean {close[0]}? " if close else ""
    return JudgeLoadError(
        f"--judge {spec!r}: {meant}use rules, a DSPy model string such as openai/gpt-5.2 or "
        "anthropic/claude-sonnet-4-5, or package.module:factory"
    )


def check_judge_spec(spec: str) -> None:
    """:class:`JudgeLoadError` if :func:`create_judge` could not build ``spec``'s judge (an
    unknown name, a plug-in that does not load, a DSPy model without dspy installed); builds
    nothing, so a pipeline can check its judge before its first stage."""
    if spec == "rules" or spec in _FACTORIES:
        return
    if _is_plugin(spec):
        _load_plugin(spec)
    elif "/" not in spec:
        raise _not_a_judge(spec)
    elif importlib.util.find_spec("dspy") is None:
        raise JudgeLoadError(_NEEDS_DSPY.format(model=spec))


def create_judge(spec: str, **options: Any) -> Judge:
    """Build a judge: ``rules``, a registered name, ``package.module:factory``, or a DSPy model."""
    if spec == "rules":
        return _rules_factory(**options)
    if spec in _FACTORIES:
        return _FACTORIES[spec](**options)
    if _is_plugin(spec):
        return _load_plugin(spec)(**options)
    if "/" not in spec:
        raise _not_a_judge(spec)
    return _dspy_factory(spec, **options)
