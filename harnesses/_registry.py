"""Harness registry: built-ins register by name with ``@harness("name")``; plug-ins load by path.

Built-in modules are imported only when their harness is created, so SDKs load lazily.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
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
    "openai": "harnesses._openai",
    "custom": "harnesses._custom",
    "claude": "harnesses._claude_cli",
}
"""Registry name -> module that registers it (imported on demand)."""


class HarnessLoadError(ValueError):
    """A harness name or plug-in path that cannot be loaded; the message says how to fix it."""


def harness(name: str) -> Callable[[HarnessFactory], HarnessFactory]:
    """Register a harness factory (a class or function taking :class:`HarnessOptions`)."""

    def decorate(factory: HarnessFactory) -> HarnessFactory:
        _FACTORIES[name] = factory
        factory.__registry_info__ = RegistryInfo(type="harness", name=name)  # type: ignore[attr-defined]
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


def create_harness(name: str, options: HarnessOptions) -> Harness:
    """Build the harness ``name`` (registry name or ``module:Class``) with ``options``."""
    factory = resolve_factory(name)
    instance = factory(options)
    if not hasattr(instance, "run"):
        raise HarnessLoadError(
            f"--harness {name!r} built {type(instance).__name__}, which has no run()"
        )
    return instance
