"""Coded errors of the simulation core and the asset pipeline (stable kebab-case codes)."""

from open4wd_base.errors import CodedError


class SimError(CodedError):
    """Content or a world description the simulation refuses (an asset, a loadout, a track, a state),
    with a stable ``code`` and a sentence saying what went wrong and what to do. Whose content it was
    (the user's file, a peer's asset) is for the caller to say."""
