import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation, check_room_id, new_room_id, new_secret, parse_secret
from tests.coded import raises_coded

HOST = Identity(bytes([7]) * 32).peer_id


def test_round_trip():
    invite = Invitation("127.0.0.1", 40123, new_room_id(), HOST, "participant", new_secret())
    assert Invitation.parse(str(invite)) == invite
    v6 = Invitation("::1", 9, new_room_id(), HOST, "spectator", new_secret())
    assert Invitation.parse(str(v6)) == v6
    assert len(parse_secret(new_secret())) == 24 and new_secret() != new_secret()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "http://127.0.0.1:1/x",
        f"open4wd://127.0.0.1:0/{new_room_id()}?host={HOST}#participant={'A' * 32}",
        f"open4wd://127.0.0.1:70000/{new_room_id()}?host={HOST}#participant={'A' * 32}",
        f"open4wd://127.0.0.1:1/{new_room_id()}?host={HOST}#admin={'A' * 32}",
        f"open4wd://127.0.0.1:1/{new_room_id()}?host={HOST}#participant=watchers",
        f"open4wd://127.0.0.1:1/{new_room_id()}?host=zzz#participant={'A' * 32}",
        f"open4wd://127.0.0.1:1/not-a-uuid-not-a-uuid-not-a-uuid-xxxx?host={HOST}#participant={'A' * 32}",
        None,
    ],
)
def test_bad_invitations(text):
    with pytest.raises(LocalError) as info:
        Invitation.parse(text)
    assert info.value.code in {"invitation-invalid", "room-id-invalid"}


def test_room_ids_are_canonical_uuid4():
    assert check_room_id(new_room_id())
    for bad in ("00000000-0000-1000-8000-000000000000", new_room_id().upper(), "x", 4):
        with raises_coded(LocalError, "room-id-invalid"):
            check_room_id(bad)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parser_only_raises_coded_errors(text):
    try:
        Invitation.parse(text)
    except LocalError as exc:
        assert exc.code in {"invitation-invalid", "room-id-invalid"}
