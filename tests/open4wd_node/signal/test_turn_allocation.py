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


async def test_coturn_takes_two_secrets_during_a_rotation(tmp_path):
    """docs/operators.md rotates the shared secret with two static-auth-secret lines: coturn accepts a
    credential minted with either, and no other."""
    import subprocess
    import time

    import trio

    from open4wd_node.signal.coturn import free_port, wait_until_answering

    binary = require_binary("turnserver", "coturn")
    settings = CoturnSettings(port=free_port("127.0.0.1"), secret="old-secret")
    config = tmp_path / "turnserver.conf"
    config.write_text(settings.config_text(tmp_path) + "static-auth-secret=new-secret\n")
    process = await trio.lowlevel.open_process([binary, "-c", str(config)], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)
    try:
        await wait_until_answering(settings.host, settings.port, process)
        for secret, accepted in (("old-secret", True), ("new-secret", True), ("other-secret", False)):
            minted = mint(secret, ALICE.peer_id, int(time.time() * 1000), ("turn:127.0.0.1",))
            kind, _ = await allocate(settings.host, settings.port, minted.username, minted.credential)
            assert (kind == ALLOCATE_SUCCESS) == accepted, secret
    finally:
        process.terminate()
        with trio.move_on_after(5):
            await process.wait()
        process.kill()
        await process.wait()
