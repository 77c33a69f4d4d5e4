"""A TURN allocation on a real coturn (``local_coturn``, REST credentials with ``use-auth-secret``) with
credentials minted by this service's ``/turn-token``: the shared secret, the username's expiry and the
HMAC agree with what coturn checks; a credential minted with another secret is refused."""

from __future__ import annotations


from open4wd_node.signal.client import SignalingClient
from open4wd_node.signal.coturn import CoturnSettings, local_coturn
from protocol.signaling.scope import new_room_scope
from protocol.signaling.turn import mint
from tests.open4wd_node.signal.helpers import running_service
from tests.open4wd_node.signal.turn_allocate import ALLOCATE_ERROR, ALLOCATE_SUCCESS, XOR_RELAYED_ADDRESS, allocate, \
    relayed_address
from tests.protocol.signaling.helpers import ALICE
from tests.services import require_binary


async def test_a_minted_credential_opens_a_relay_allocation_on_coturn():
    require_binary("turnserver", "coturn")
    async with local_coturn(CoturnSettings()) as coturn:
        secret = coturn.settings.secret
        async with running_service(secret, turn_urls=(coturn.turn_url,)) as run:
            async with SignalingClient.connect(run.url, new_room_scope(), ALICE) as alice:
                credentials = await alice.turn_credentials()
        assert credentials.urls == (coturn.turn_url,)
        kind, attributes = await allocate(coturn.settings.host, coturn.settings.port, credentials.username,
                                          credentials.credential)
        assert kind == ALLOCATE_SUCCESS
        host, port = relayed_address(attributes[XOR_RELAYED_ADDRESS])
        assert host == "127.0.0.1" and coturn.settings.min_port <= port <= coturn.settings.max_port
        forged = mint("another-secret", ALICE.peer_id, run.service.now_ms(), credentials.urls)
        kind, _ = await allocate(coturn.settings.host, coturn.settings.port, forged.username, forged.credential)
        assert kind == ALLOCATE_ERROR
        expired = mint(secret, ALICE.peer_id, run.service.now_ms() - 600_000, credentials.urls)
        kind, _ = await allocate(coturn.settings.host, coturn.settings.port, expired.username, expired.credential)
        assert kind == ALLOCATE_ERROR  # coturn reads the expiry in the username
