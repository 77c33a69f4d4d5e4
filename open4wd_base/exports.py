"""Lazy re-exports (PEP 562) for a package's ``__init__``.

Every subsystem package names its public API in its ``__init__`` (the h11 pattern), but importing a
package must stay cheap: ``open4wd-node version`` imports ``protocol.room.config`` and must not pay for
the room machines, cryptography or trio. So ``__init__`` maps each public name to its module, and the
module is imported the first time the name is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, public: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and ``__getattr__`` for ``package``, whose ``public`` maps a name to the submodule
    (relative to the package) that defines it. Use: ``__all__, __getattr__ = lazy_exports(__name__, {...})``."""
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    return sorted(public), __getattr__
