"""Contacts (direct address and relays) and the relay's messages: strict parsing of what peers send."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.encoding.wire import decode_message, encode_message
from protocol.errors import ProtocolError
from protocol.relay.contact import Contact
from protocol.relay.messages import RELAY_MESSAGES, RelayConnect, RelayIncoming, RelayReserved


def test_a_direct_only_contact_is_the_plain_address_of_before():
    assert str(Contact("127.0.0.1:4000")) == "127.0.0.1:4000"
    assert Contact.parse("127.0.0.1:4000") == Contact("127.0.0.1:4000")
    both = Contact("[::1]:4000", ("relay.example.net:4100", "10.0.0.1:4100"))
    assert Contact.parse(str(both)) == both and both.reachable
    assert Contact.parse("relay=10.0.0.1:4100") == Contact(None, ("10.0.0.1:4100",))
    assert not Contact.parse("").reachable


@pytest.mark.parametrize("text", ["a:1 b:2", "relay=x", "host:99999", "relay=a:1 relay=a:1",
                                  " ".join(f"relay=r{i}:1" for i in range(5)), "x" * 300, "h:1;rm"])
def test_malformed_contacts_are_refused(text):
    with pytest.raises(ProtocolError) as caught:
        Contact.parse(text)
    assert caught.value.code == "contact-invalid"


@given(st.text(max_size=300))
def test_any_text_parses_or_is_refused_with_its_code(text):
    try:
        parsed = Contact.parse(text)
    except ProtocolError as exc:
        assert exc.code == "contact-invalid"
    else:
        assert Contact.parse(str(parsed)) == parsed


@given(st.binary(max_size=200))
def test_relay_messages_decode_strictly_or_refuse(body):
    try:
        decode_message(body, RELAY_MESSAGES)
    except ProtocolError:
        pass


def test_relay_messages_round_trip():
    for msg in (RelayConnect(target="z1"), RelayIncoming(circuit=b"c" * 16, source="z2"),
                RelayReserved(ttlMs=1, circuitMs=2, circuitBytes=3)):
        assert decode_message(encode_message(msg), RELAY_MESSAGES) == msg
