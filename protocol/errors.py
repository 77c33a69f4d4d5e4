"""Coded errors of the protocol core (see ``open4wd_base.errors`` for the family and whose fault is whose).

``ProtocolError`` is a rule of the protocol broken by what a peer sent: the default reading of a refusal
in ``protocol/``, blamed on the peer when it comes out of a message handler. A misuse of a machine by
this node's own shell is a ``LocalError`` and is raised, never blamed on a peer.
"""

from open4wd_base.errors import CodedError, LocalError, PeerError

__all__ = ["CodedError", "LocalError", "PeerError", "ProtocolError"]


class ProtocolError(PeerError):
    """A protocol rule broken by what a peer sent, with a stable ``code`` and a sentence saying what to do."""
