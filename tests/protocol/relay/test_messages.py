"""The relay's messages: strict decoding of what peers send."""

from hypothesis import given
from hypothesis import strategies as st

from protocol.encoding.wire import decode_message, encode_message
from protocol.errors import ProtocolError
from protocol.relay.messages import RELAY_MESSAGES, RelayConnect, RelayIncoming, RelayReserved


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
