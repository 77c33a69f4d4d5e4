"""Coded errors: every refusal carries a stable kebab-case ``code`` and a sentence saying what happened
and what to do, and its type says whose fault it is.

- ``PeerError``: what a peer sent broke a rule. Only this is ever blamed on a peer (a race turns it into
  ``Misbehaviour``, a room answers or closes that peer's link).
- ``LocalError``: a bug or a misuse of this node's own API (a call in the wrong state, an argument out of
  range). It is raised to the caller and never blamed on a peer.
- ``SimError``: content or a world description the simulation refuses (an asset, a loadout, a track, a
  state's bytes). Whose content it was is for the caller to say. It lives here, beside the other
  families, because ``protocol`` drives a world through a small interface without importing
  ``sim_core``, and must still tell the world's refusal of a peer's bytes (the peer's fault) from any
  other exception (a bug of this node).
- User input has its own subclass in the shell: ``UserError`` (a file, a setting, the command line).

Everything a user can see is a ``CodedError``, so the command line catches one type.
"""

from __future__ import annotations


class CodedError(Exception):
    """A refusal with a stable ``code`` and a ``message`` for people; subclasses say whose fault it is."""

    exit_status = 1  # what the command line exits with when this reaches it

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class PeerError(CodedError):
    """A peer broke a rule with what it sent: blamed on that peer, never on this node."""


class LocalError(CodedError):
    """A bug or a misuse of this node's own API: raised to the caller, never blamed on a peer."""


class SimError(CodedError):
    """Content or a world description the simulation refuses (an asset, a loadout, a track, a state),
    with a stable ``code`` and a sentence saying what went wrong and what to do. Whose content it was
    (the user's file, a peer's asset or snapshot) is for the caller to say."""
