"""Spectators (spec/netcode.md §6.4): a source streams signed inputs and checkpoints; a viewer verifies, re-simulates."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "CheckpointLoaded": "actions",
    "DialSource": "actions",
    "DropSource": "actions",
    "FrameShown": "actions",
    "HashChecked": "actions",
    "RoundBegan": "actions",
    "RoundOver": "actions",
    "ViewEnded": "actions",
    "ViewerAction": "actions",
    "FrameInput": "messages",
    "KeyAnnounce": "messages",
    "ModeSelect": "messages",
    "RosterEntry": "messages",
    "SessionEnd": "messages",
    "SignedVote": "messages",
    "SpectateCheckpoint": "messages",
    "SpectateEndReason": "messages",
    "SpectateInputs": "messages",
    "SpectateKey": "messages",
    "SpectateMode": "messages",
    "SpectateRound": "messages",
    "SpectateRoundEnd": "messages",
    "SpectateVote": "messages",
    "SPECTATE_LINK": "messages",
    "SpectateSource": "source",
    "SpectateViewer": "viewer",
    "ViewerPhase": "viewer",
    "ViewRound": "viewer",
})
