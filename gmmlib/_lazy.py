"""A package's names that live in its modules, each module loaded on first use (PEP 562)."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(
    package: str, public: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) whose names
    ``public`` (name -> the module, relative to the package, that defines it) load their module
    when first read; the value is then bound in ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str) -> Any:
        if name in public:
            value = getattr(import_module(f".{public[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*namespace, *public])

    return __getattr__, __dir__
