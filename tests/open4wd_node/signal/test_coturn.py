"""The local coturn: its configuration, its start (it answers STUN), its stop, and its refusals."""

import socket

import pytest
import trio

from open4wd_node.runtime.errors import UserError
from open4wd_node.signal import coturn
from open4wd_node.signal.coturn import CoturnSettings, local_coturn
from protocol.webrtc.stun import is_binding_success, stun_binding_request
from tests.services import require_binary


def test_loopback_config_allows_loopback_peers_only_there(tmp_path):
    loopback = CoturnSettings(port=3478, secret="s3cret").config_text(tmp_path)
    assert "allow-loopback-peers" in loopback.splitlines()
    assert "denied-peer-ip=127.0.0.0-127.255.255.255" not in loopback
    assert "static-auth-secret=s3cret" in loopback and "use-auth-secret" in loopback
    assert f"userdb={tmp_path / 'turndb'}" in loopback  # nothing outside its own directory
    other = CoturnSettings(host="192.0.2.1", port=3478).config_text(tmp_path)
    assert "allow-loopback-peers" not in other
    assert "denied-peer-ip=127.0.0.0-127.255.255.255" in other.splitlines()
    assert "listening-ip=192.0.2.1" in other and "relay-ip=192.0.2.1" in other


def test_binding_success_is_matched_to_its_transaction():
    request, transaction = stun_binding_request()
    assert len(request) == 20 and request[8:] == transaction
    answer = b"\x01\x01\x00\x00\x21\x12\xa4\x42" + transaction
    assert is_binding_success(answer, transaction)
    assert not is_binding_success(answer, bytes(12))
    assert not is_binding_success(request, transaction)  # a request is not an answer
    assert not is_binding_success(answer[:19], transaction)


def test_secret_is_not_in_the_settings_repr():
    assert "hidden" not in repr(CoturnSettings(secret="hidden"))


async def test_started_coturn_answers_stun_and_stops():
    require_binary("turnserver", "coturn")
    async with local_coturn() as running:
        host, port = running.settings.host, running.settings.port
        assert running.stun_url == f"stun:127.0.0.1:{port}" and running.turn_url == f"turn:127.0.0.1:{port}"
        with trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            await probe.connect((host, port))
            request, transaction = stun_binding_request()
            await probe.send(request)
            with trio.fail_after(5):
                assert is_binding_success(await probe.recv(2048), transaction)
        log_dir = running.log_path.parent
        assert log_dir.is_dir()
    assert not log_dir.exists()  # its files went with it
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:  # and its port is free again
        tcp.bind((host, port))


async def test_missing_coturn_is_a_coded_error(monkeypatch):
    monkeypatch.setattr(coturn, "turnserver_path", lambda: None)
    with pytest.raises(UserError) as refused:
        async with local_coturn():
            pass
    assert refused.value.code == "coturn-missing"


async def test_coturn_that_cannot_start_is_a_coded_error_with_its_log(tmp_path, monkeypatch):
    require_binary("turnserver", "coturn")
    fake = tmp_path / "turnserver"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(coturn, "turnserver_path", lambda: str(fake))
    with pytest.raises(UserError) as refused:
        async with local_coturn():
            pass
    assert refused.value.code == "coturn-failed" and "status 3" in refused.value.message
