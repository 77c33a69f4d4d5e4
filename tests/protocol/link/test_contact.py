"""Contacts: a direct address, signaling services and a scope; strict parsing of what peers send,
the text round trip, and signaling URLs (ws and wss only, bounded)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.link.contact import MAX_CONTACT_CHARS, Contact
from protocol.signaling.url import MAX_SERVICE_URL_CHARS, check_service_url

ROOM_SCOPE = "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
MATCH_SCOPE = "match:" + "ab" * 32


def test_a_direct_only_contact_is_the_plain_address_of_before():
    assert str(Contact("127.0.0.1:4000")) == "127.0.0.1:4000"
    assert Contact.parse("127.0.0.1:4000") == Contact("127.0.0.1:4000")
    assert Contact.parse("[::1]:4000").reachable
    assert not Contact.parse("").reachable


def test_a_relay_of_an_older_node_is_refused_saying_what_replaced_it():
    with pytest.raises(ProtocolError) as caught:
        Contact.parse("203.0.113.5:47600 relay=10.0.0.1:4100")
    assert caught.value.code == "contact-invalid" and "signal=" in caught.value.message


def test_signaling_services_and_a_scope_ride_along():
    full = Contact("203.0.113.5:47600", ("wss://signal.example.net/ws", "ws://[::1]:9000"), ROOM_SCOPE)
    text = str(full)
    assert text == f"203.0.113.5:47600 signal=wss://signal.example.net/ws signal=ws://[::1]:9000 scope={ROOM_SCOPE}"
    assert Contact.parse(text) == full
    announced = Contact(signals=("ws://127.0.0.1:9000",))  # a member announces no scope: where it is wanted decides
    assert str(announced) == "signal=ws://127.0.0.1:9000" and announced.reachable
    assert announced.in_scope(MATCH_SCOPE) == Contact(signals=("ws://127.0.0.1:9000",), scope=MATCH_SCOPE)
    assert Contact("127.0.0.1:1").in_scope(MATCH_SCOPE) == Contact("127.0.0.1:1")  # no services: no scope
    assert Contact.parse(f"scope={ROOM_SCOPE} signal=ws://h") == Contact(signals=("ws://h",), scope=ROOM_SCOPE)


@pytest.mark.parametrize("text", [
    "a:1 b:2", "relay=x", "host:99999", "relay=a:1 relay=a:1", " ".join(f"relay=r{i}:1" for i in range(5)),
    "x" * 300, "h:1;rm",
    "signal=http://h", "signal=ws://h signal=ws://h", " ".join(f"signal=ws://s{i}" for i in range(5)),
    "signal=ws://h/a?b", "signal=ws://h#x", "signal=ws://u@h", "signal=ws://h:0", "signal=ws://[zz]", "signal=",
    f"scope={ROOM_SCOPE}", f"signal=ws://h scope={ROOM_SCOPE} scope={MATCH_SCOPE}", "signal=ws://h scope=room:x",
    "signal=ws://h scope=ROOM:2F1C3B4A-5D6E-4F70-8A9B-0C1D2E3F4A5B", "scope=",
])
def test_malformed_contacts_are_refused(text):
    with pytest.raises(ProtocolError) as caught:
        Contact.parse(text)
    assert caught.value.code == "contact-invalid"


@pytest.mark.parametrize("url", ["ws://127.0.0.1:9000", "wss://signal.example.net", "wss://h/ws", "ws://[::1]:1/a/b",
                                 "ws://h/a.b_c~d-e/", "wss://" + "a" * 122])
def test_signaling_urls_that_a_contact_takes(url):
    assert check_service_url(url) == url


@pytest.mark.parametrize("url", ["http://h", "WS://h", "ws:/h", "ws://", "ws://h:65536", "ws://h/%41", "ws://h/a b",
                                 "ws://h?room=x", "ws://[::g]", "ws://a..b", "wss://" + "a" * 123, "ws://h:/x",
                                 "turn:127.0.0.1:3478"])
def test_other_urls_are_refused_with_their_code(url):
    with pytest.raises(ProtocolError) as caught:
        check_service_url(url)
    assert caught.value.code == "signal-url-invalid"
    assert MAX_SERVICE_URL_CHARS == 128


@given(st.text(max_size=300))
def test_any_text_parses_or_is_refused_with_its_code(text):
    try:
        parsed = Contact.parse(text)
    except ProtocolError as exc:
        assert exc.code == "contact-invalid"
    else:
        assert Contact.parse(str(parsed)) == parsed and len(str(parsed)) <= MAX_CONTACT_CHARS


TOKENS = st.sampled_from(["127.0.0.1:4000", "[::1]:1", "relay=r.example:4100", "relay=10.0.0.1:1",
                          "signal=ws://127.0.0.1:9000", "signal=wss://s.example/ws", f"scope={ROOM_SCOPE}",
                          f"scope={MATCH_SCOPE}", "signal=ws://x:0", "junk"])


@given(st.lists(TOKENS, max_size=8))
def test_contacts_built_from_plausible_tokens_round_trip_or_are_refused(tokens):
    try:
        parsed = Contact.parse(" ".join(tokens))
    except ProtocolError as exc:
        assert exc.code == "contact-invalid"
    else:
        assert Contact.parse(str(parsed)) == parsed


@given(st.text(max_size=140))
def test_any_url_is_taken_unchanged_or_refused_with_its_code(text):
    try:
        assert check_service_url(text) == text
    except ProtocolError as exc:
        assert exc.code == "signal-url-invalid"
    else:
        assert text.startswith(("ws://", "wss://")) and not set(text) & set("?#%& @")
