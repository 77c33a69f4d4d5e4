"""Invitations: the text a player pastes (``join INVITATION``), parsed strictly."""

from __future__ import annotations

from fuzz.harness import Target
from protocol.room.invitation import Invitation


def one_input(data: bytes) -> None:
    """Any text (bytes that are not UTF-8 are refused by the command line before they get here)."""
    text = data.decode("utf-8", "surrogateescape")
    invitation = Invitation.parse(text)
    assert Invitation.parse(str(invitation)) == invitation  # what parses prints back to the same invitation


TARGETS = {"invitation": Target("invitation", one_input, "invitation text")}
