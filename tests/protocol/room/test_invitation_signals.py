"""Invitations that name the host's signaling services (docs/webrtc.md): the room's scope comes from the
room id, a host without a direct address is reached through the services alone, the contact the joiner
dials names them with the scope, malformed service parts are refused with ``invitation-invalid``."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError
from protocol.link.contact import Contact
from protocol.room.invitation import Invitation, new_room_id, new_secret

PEER = "z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX"
ROOM = new_room_id()
SECRET = new_secret()


def test_services_ride_after_the_host_and_the_scope_is_the_room_id():
    invite = Invitation("203.0.113.5", 47600, ROOM, PEER, "participant", SECRET,
                        ("wss://signal.example.net/ws", "ws://127.0.0.1:9000"))
    text = str(invite)
    assert text == (f"open4wd://203.0.113.5:47600/{ROOM}?host={PEER}"
                    f"&signal=wss://signal.example.net/ws&signal=ws://127.0.0.1:9000#participant={SECRET}")
    assert Invitation.parse(text) == invite
    assert invite.scope == f"room:{ROOM}"
    assert Contact.parse(invite.contact) == Contact("203.0.113.5:47600", ("wss://signal.example.net/ws",
                                                                          "ws://127.0.0.1:9000"), f"room:{ROOM}")


@pytest.mark.parametrize("text", [
    f"open4wd://203.0.113.5:47600/{ROOM}?host={PEER}&relay=10.0.0.1:4100#participant={SECRET}",
    f"open4wd:///{ROOM}?host={PEER}&relay=r.example:4100&signal=ws://127.0.0.1:9000#spectator={SECRET}",
])
def test_an_invitation_of_an_older_node_naming_a_relay_is_refused_with_its_own_code(text):
    with pytest.raises(LocalError) as caught:
        Invitation.parse(text)
    assert caught.value.code == "invitation-relay-retired" and "&signal=" in caught.value.message


def test_a_host_reached_only_through_signaling_has_no_address():
    only = Invitation("", 0, ROOM, PEER, "spectator", SECRET, signals=("ws://127.0.0.1:9000",))
    assert str(only) == f"open4wd:///{ROOM}?host={PEER}&signal=ws://127.0.0.1:9000#spectator={SECRET}"
    assert Invitation.parse(str(only)) == only
    assert only.contact == f"signal=ws://127.0.0.1:9000 scope=room:{ROOM}"
    plain = Invitation("127.0.0.1", 4000, ROOM, PEER, "participant", SECRET)
    assert plain.contact == "127.0.0.1:4000"  # no service: no scope in the contact either


@pytest.mark.parametrize("middle", [
    "&signal=http://h",
    "&signal=ws://h&signal=ws://h",
    "".join(f"&signal=ws://s{i}" for i in range(5)),
    "&signal=",
    "&signal=ws://h/a%20b",
    "&signal=wss://" + "a" * 130,
    "&signal=ws://h&relay=r:1",  # not an invitation of any version
])
def test_malformed_service_parts_are_refused(middle):
    with pytest.raises(LocalError) as caught:
        Invitation.parse(f"open4wd:///{ROOM}?host={PEER}{middle}#participant={SECRET}")
    assert caught.value.code == "invitation-invalid"


URLS = st.sampled_from(["ws://127.0.0.1:9000", "wss://s.example/ws", "ws://[::1]:1", "ws://bad:0", "x"])
ADDRESSES = st.sampled_from(["", "127.0.0.1:4000", "[::1]:1"])
RELAYS = st.sampled_from(["r.example:4100", "10.0.0.1:1", "bad"])


@settings(max_examples=300, deadline=None)
@given(ADDRESSES, st.lists(RELAYS, max_size=5), st.lists(URLS, max_size=5))
def test_built_invitations_round_trip_or_are_refused_with_their_code(address, relays, urls):
    text = (f"open4wd://{address}/{ROOM}?host={PEER}" + "".join(f"&relay={r}" for r in relays)
            + "".join(f"&signal={u}" for u in urls) + f"#participant={SECRET}")
    try:
        parsed = Invitation.parse(text)
    except LocalError as exc:
        assert exc.code == ("invitation-relay-retired" if relays else "invitation-invalid")
    else:
        assert not relays and str(parsed) == text and Invitation.parse(str(parsed)) == parsed
        assert Contact.parse(parsed.contact).signals == parsed.signals
