"""The simulation's coded error, ``SimError`` (stable kebab-case codes). It is defined with the other error
families in ``open4wd_base.errors``, so that the protocol core can tell a world's refusal of a peer's bytes
from a bug without importing ``sim_core``."""

from open4wd_base.errors import SimError

__all__ = ["SimError"]
