"""Invitations that name the host's relays (docs/relay.md): old invitations parse as before, relay-only
hosts have no direct address, malformed relay parts are refused with ``invitation-invalid``."""

import pytest

from protocol.errors import LocalError
from protocol.room.invitation import Invitation, new_room_id, new_secret

PEER = "z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX"
ROOM = new_room_id()
SECRET = new_secret()


def test_an_invitation_without_relays_is_the_text_of_before():
    plain = Invitation("192.168.1.20", 47600, ROOM, PEER, "participant", SECRET)
    text = f"open4wd://192.168.1.20:47600/{ROOM}?host={PEER}#participant={SECRET}"
    assert str(plain) == text and Invitation.parse(text) == plain
    assert plain.contact == "192.168.1.20:47600"


def test_relays_ride_along_and_a_relay_only_host_has_no_address():
    both = Invitation("[::1]".strip("[]"), 4000, ROOM, PEER, "participant", SECRET, ("relay.example.net:4100", "10.0.0.1:4100"))
    text = str(both)
    assert text == (f"open4wd://[::1]:4000/{ROOM}?host={PEER}&relay=relay.example.net:4100&relay=10.0.0.1:4100"
                    f"#participant={SECRET}")
    assert Invitation.parse(text) == both
    assert both.contact == "[::1]:4000 relay=relay.example.net:4100 relay=10.0.0.1:4100"
    only = Invitation("", 0, ROOM, PEER, "spectator", SECRET, ("10.0.0.1:4100",))
    assert str(only) == f"open4wd:///{ROOM}?host={PEER}&relay=10.0.0.1:4100#spectator={SECRET}"
    assert Invitation.parse(str(only)) == only and only.contact == "relay=10.0.0.1:4100"


@pytest.mark.parametrize("middle", [
    "",  # neither an address nor a relay
    "&relay=nohost",
    "&relay=h:0",
    "&relay=a:1&relay=a:1",
    "".join(f"&relay=r{i}:1" for i in range(5)),
    "&relay=",
])
def test_malformed_relay_parts_are_refused(middle):
    authority = "" if middle == "" else "h:1"
    with pytest.raises(LocalError) as caught:
        Invitation.parse(f"open4wd://{authority}/{ROOM}?host={PEER}{middle}#participant={SECRET}")
    assert caught.value.code == "invitation-invalid"
