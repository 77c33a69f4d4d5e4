"""``open4wd-node watch`` refuses what it cannot use with a coded error and no traceback."""

from __future__ import annotations

import pytest

from open4wd_node.cli.main import main
from protocol.identity.keys import Identity
from protocol.room.invitation import new_secret

HOST = Identity(b"\x01" * 32).peer_id
ROOM = "0b9e0a8e-6c1f-4d5e-9a3b-2f4c6d8e0a1b"


@pytest.mark.parametrize(("invite", "code"), [
    ("not-an-invitation", "invitation-invalid"),
    (f"open4wd://127.0.0.1:9/{ROOM}?host={HOST}#participant={new_secret()}", "invitation-role"),
])
def test_watch_refuses_an_invitation_it_cannot_use(capsys, tmp_path, invite, code) -> None:
    status = main(["--data-dir", str(tmp_path), "watch", invite])
    err = capsys.readouterr().err
    assert status == 1 and f"error[{code}]: " in err and "Traceback" not in err


def test_watch_says_when_no_room_answers(capsys, tmp_path) -> None:
    invite = f"open4wd://127.0.0.1:9/{ROOM}?host={HOST}#spectator={new_secret()}"
    status = main(["--data-dir", str(tmp_path), "watch", invite, "--json"])
    captured = capsys.readouterr()
    assert status == 1 and "error[dial-failed]: " in captured.err and "Traceback" not in captured.err + captured.out
