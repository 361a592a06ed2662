"""Harness registry: built-ins register by name with ``@harness("name")``; plug-ins load by path.

Built-in modules are imported only when their harness is created, so SDKs load lazily.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from harnesses._protocol import Harness, HarnessOptions

HarnessFactory = Callable[[HarnessOptions], Harness]


@dataclass(frozen=True)
class RegistryInfo:
    type: str
    name: str


_FACTORIES: dict[str, HarnessFactory] = {}

BUILTIN_MODULES: dict[str, str] = {
    "scripted": "harnesses.scripted",
    "nothing": "harnesses._nothing",
    "guess": "harnesses.scripted._conversation",
    "openai": "harnesses._openai",
    "custom": "harnesses._custom",
    "claude": "harnesses._claude_cli",
}
"""Registry name -> module that registers it (imported on demand)."""


class HarnessLoadError(ValueError):
    """A harness name or plug-in path that cannot be loaded; the message says how to fix it."""


def harness(
    name: str, options: Mapping[str, str] | None = None
) -> Callable[[HarnessFactory], HarnessFactory]:
    """Register a harness factory (a class or function taking :class:`HarnessOptions`).

    ``options`` declares every ``--harness-opt`` key the harness reads (key -> what it does):
    any other key is refused before the run starts. A factory that declares none (a plug-in
    without a ``known_options`` attribute) accepts no key: a key it never reads would otherwise
    be recorded as if it had changed the run."""

    def decorate(factory: HarnessFactory) -> HarnessFactory:
        _FACTORIES[name] = factory
        factory.__registry_info__ = RegistryInfo(type="harness", name=name)  # type: ignore[attr-defined]
        if options is not None:
            factory.known_options = dict(options)  # type: ignore[attr-defined]
        return factory

    return decorate


def harness_names() -> list[str]:
    return sorted(BUILTIN_MODULES)


def _load_plugin(path: str) -> HarnessFactory:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise HarnessLoadError(
            f"--harness {path!r}: a plug-in is given as package.module:ClassName"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise HarnessLoadError(
            f"--harness {path!r}: cannot import module {module_name!r} ({error}); "
            "is it installed or on PYTHONPATH?"
        ) from None
    except Exception as error:  # a syntax error, or the module raising as it is imported
        raise HarnessLoadError(
            f"--harness {path!r}: importing {module_name!r} failed: {_describe(error)}; "
            "fix the plug-in module"
        ) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise HarnessLoadError(
            f"--harness {path!r}: module {module_name!r} has no attribute {attribute!r}"
        ) from None


def resolve_factory(name: str) -> HarnessFactory:
    if ":" in name:
        return _load_plugin(name)
    if name in _FACTORIES and name not in BUILTIN_MODULES:
        return _FACTORIES[name]  # registered in-process (tests, benches, embedding applications)
    if name not in BUILTIN_MODULES:
        known = ", ".join(harness_names())
        raise HarnessLoadError(
            f"unknown harness {name!r}; built-in harnesses: {known}; "
            "or give a plug-in as package.module:ClassName"
        )
    importlib.import_module(BUILTIN_MODULES[name])
    return _FACTORIES[name]


RUNNER_SETTINGS = {
    "faults": "--erp-fault-rate",
    "fault_rate": "--erp-fault-rate",
    "erp_fault_rate": "--erp-fault-rate",
    "fault_seed": "--erp-fault-seed",
    "timeout": "--timeout",
    "trials": "--trials",
    "max_turns": "--max-turns",
    "max_tool_calls": "--max-tool-calls",
    "max_tokens": "--max-tokens",
    "max_cost_usd": "--max-cost-usd",
}
"""Runner flags often mistaken for harness options: an unknown key close to one is pointed at it."""


def declared_options(name: str) -> dict[str, str]:
    """The ``--harness-opt`` keys harness ``name`` declares (none for a plug-in without a
    ``known_options`` attribute)."""
    return dict(getattr(resolve_factory(name), "known_options", None) or {})


UNDECLARED_HINT = "a plug-in lists the keys it reads in a known_options class attribute"
"""Said when a harness that declares no option is given one."""


def unknown_keys_text(unknown: Iterable[str], suggestions: Mapping[str, str]) -> str:
    """``fault (did you mean faults?), x``: each unknown key with its close matches among
    ``suggestions`` (a key someone may have meant -> what to write instead)."""
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, list(suggestions), n=2, cutoff=0.75)
        meant = list(dict.fromkeys(suggestions[match] for match in close))
        parts.append(f"{key} (did you mean {' or '.join(meant)}?)" if meant else key)
    return ", ".join(parts)


def check_harness_options(name: str, keys: Iterable[str]) -> None:
    """:class:`HarnessLoadError` naming every key of ``keys`` that harness ``name`` does not
    declare, with close matches and the list of the keys it knows."""
    known = declared_options(name)
    unknown = sorted(set(keys) - set(known))
    if unknown:
        suggestions = {**RUNNER_SETTINGS, **{key: key for key in known}}
        hint = f" ({UNDECLARED_HINT})" if not known and ":" in name else ""
        raise HarnessLoadError(
            f"--harness {name}: unknown --harness-opt {unknown_keys_text(unknown, suggestions)}; "
            f"known options: {', '.join(sorted(known)) or 'none'}{hint}"
        )


def credentials_problem(name: str, options: HarnessOptions) -> str | None:
    """Why harness ``name`` cannot reach its model for want of a credential (one line naming the
    variable to set), or None. A harness declares the check as a static
    ``credentials_problem(options)``: the pipeline asks it before its first stage (the runner
    builds the harness, which checks the same, before any server starts)."""
    check = getattr(resolve_factory(name), "credentials_problem", None)
    return None if check is None else check(options)


def create_harness(name: str, options: HarnessOptions) -> Harness:
    """Build the harness ``name`` (registry name or ``module:Class``) with ``options``."""
    factory = resolve_factory(name)
    check_harness_options(name, options.extra)
    try:
        instance = factory(options)
    except HarnessLoadError:
        raise
    except Exception as error:
        if isinstance(error, ValueError) and ":" not in name:
            raise  # built-ins say what is wrong with the options themselves
        raise HarnessLoadError(
            f"--harness {name!r}: creating the harness failed: {_describe(error)}"
        ) from None
    if not hasattr(instance, "run"):
        raise HarnessLoadError(
            f"--harness {name!r} built {type(instance).__name__}, which has no run()"
        )
    return instance


def _describe(error: BaseException) -> str:
    """``Class: message`` on one line, with the file and line of a syntax error."""
    text = " ".join(str(error).split())[:300]
    if isinstance(error, SyntaxError) and error.filename:
        text = f"{error.msg} ({error.filename}, line {error.lineno})"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
