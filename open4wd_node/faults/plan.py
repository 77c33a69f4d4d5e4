"""What a node is asked to suffer: ``--fault KIND@FRAME[:SECONDS]`` on the command line (the soak and the
demo pass it to their node processes), a test's ``NodeFault``, or a deliberately non-deterministic build."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import StrEnum

from open4wd_node.runtime.errors import UserError


class FaultKind(StrEnum):
    """What happens to the node after its fault's frame of the first round (``fault`` event ``kind``)."""

    CORRUPT_STATE = "corrupt-state"
    """Its own car moves 1 µm, every time that frame is stepped (a rollback that re-simulates it corrupts
    it again, as a real bug would)."""
    DISCONNECT = "disconnect"
    """It drops every link it raced on and stays unreachable for the fault's seconds."""
    CUT_LINK = "cut-link"
    """It drops its link to one peer (the lowest PeerId it races with) and neither dials nor admits that peer
    for the fault's seconds, while its links to the others stay up: a partial partition."""
    STALL = "stall"
    """It stands still for the fault's seconds, pump and links, as a process stopped by SIGSTOP."""
    PUMP_STALL = "pump-stall"
    """Only its pump stands still: its links are read and answered, its race does not move."""


COMMAND_LINE = re.compile(r"(corrupt-state|disconnect|cut-link)@([0-9]{1,7})(?::([0-9]{1,3}))?")
"""The kinds ``--fault`` offers: the three a real process can be asked for (a stall is SIGSTOP's, the soak's)."""


@dataclass(frozen=True)
class NodeFault:
    """One fault: its kind, the frame of the first round after which it fires, and how long it lasts."""

    kind: FaultKind
    frame: int
    seconds: float = 0.0


def parse_fault(text: str) -> NodeFault:
    """``--fault``'s value: ``corrupt-state@FRAME``, ``disconnect@FRAME[:SECONDS]`` or
    ``cut-link@FRAME[:SECONDS]`` (5 s by default); ``UserError`` ``fault-invalid`` for anything else."""
    match = COMMAND_LINE.fullmatch(text)
    if match is None or (match[1] == FaultKind.CORRUPT_STATE and match[3]):
        raise UserError("fault-invalid", "--fault takes corrupt-state@FRAME, disconnect@FRAME[:SECONDS] or "
                                         f"cut-link@FRAME[:SECONDS], got {text!r}")
    if match[1] == FaultKind.CORRUPT_STATE:
        return NodeFault(FaultKind.CORRUPT_STATE, int(match[2]))
    return NodeFault(FaultKind(match[1]), int(match[2]), float(match[3] or 5))


NONDETERMINISM_ENV = "OPEN4WD_TEST_NONDETERMINISTIC_FRAME"
"""A test hook, never set in a real race: the soak's false-desync test builds a deliberately
non-deterministic node with it (``FaultWorld``'s float)."""


def nondeterministic_frame() -> int | None:
    """The frame named by ``NONDETERMINISM_ENV`` in this process's environment, else None."""
    text = os.environ.get(NONDETERMINISM_ENV, "")
    return int(text) if text.isdigit() else None
