"""SDP fingerprints, the link transcript (a frozen vector) and candidate lines."""

from __future__ import annotations

from hypothesis import given, strategies as st

from protocol.errors import PeerError
from protocol.webrtc.sdp import (
    MAX_SDP_BYTES,
    CandidateType,
    bound_sdp,
    dtls_fingerprint,
    parse_candidate,
    sdp_candidates,
    webrtc_transcript,
)
from tests.coded import raises_coded

FP256 = ":".join(["AB"] * 32)
SDP = ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"
       "a=candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host\r\n"
       "a=candidate:2 1 udp 1694498815 198.51.100.7 40000 typ srflx raddr 0.0.0.0 rport 0\r\n"
       f"a=fingerprint:sha-256 {FP256}\r\na=fingerprint:sha-512 {':'.join(['CD'] * 64)}\r\na=setup:actpass\r\n")


def test_the_sha256_fingerprint_is_taken_and_the_others_dropped():
    assert dtls_fingerprint(SDP) == FP256
    assert dtls_fingerprint(SDP.replace(FP256, FP256.lower())) == FP256
    bound = bound_sdp(SDP)
    assert "sha-512" not in bound and f"sha-256 {FP256}" in bound and "a=setup:actpass" in bound


def test_sdps_that_cannot_bind_a_peer_are_refused_with_a_code():
    no_fingerprint = "\r\n".join(line for line in SDP.split("\r\n") if "fingerprint" not in line)
    with raises_coded(PeerError, "sdp-no-fingerprint"):
        dtls_fingerprint(no_fingerprint)
    with raises_coded(PeerError, "sdp-fingerprint-not-sha256"):
        dtls_fingerprint(SDP.replace("sha-256", "sha-1"))
    with raises_coded(PeerError, "sdp-fingerprint-malformed"):
        dtls_fingerprint(SDP.replace(FP256, "AB:CD"))
    with raises_coded(PeerError, "sdp-fingerprint-ambiguous"):
        dtls_fingerprint(SDP + f"a=fingerprint:sha-256 {':'.join(['EF'] * 32)}\r\n")
    with raises_coded(PeerError, "sdp-too-large"):
        dtls_fingerprint(SDP + "a=x\r\n" * (MAX_SDP_BYTES // 5))


@given(st.text(max_size=300))
def test_any_text_gives_a_fingerprint_or_a_coded_refusal(text):
    try:
        assert len(dtls_fingerprint(text)) == 95
    except PeerError as exc:
        assert exc.code.startswith("sdp-")


def test_the_transcript_is_frozen_and_binds_every_field():
    args = ("4.0.0", "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b", "zOfferer", "zAnswerer", FP256, ":".join(["CD"] * 32))
    transcript = webrtc_transcript(*args)
    assert transcript.hex() == "0a9fdfaa22cc00cf94d72649b6ad39f5c328ba647bdbd29e55ca34444db1e3c2"
    for i in range(len(args)):
        changed = list(args)
        changed[i] = changed[i] + "x"
        assert webrtc_transcript(*changed) != transcript
    swapped = (args[0], args[1], args[3], args[2], args[5], args[4])
    assert webrtc_transcript(*swapped) != transcript


def test_candidates_parse_and_junk_is_refused():
    host, srflx = sdp_candidates(SDP)
    assert (host.address, host.port, host.type, host.is_ip) == ("127.0.0.1", 50000, CandidateType.HOST, True)
    assert srflx.type == CandidateType.SRFLX
    mdns = parse_candidate("candidate:3 1 udp 2122260223 3f1c8a1e-0b0a-4c6f-9d5e-7b1b2c3d4e5f.local 54321 typ host")
    assert not mdns.is_ip
    for junk in ("", "candidate:1 1 udp x 1.2.3.4 5 typ host", "candidate:1 1 udp 1 1.2.3.4 5 type host",
                 "candidate:1 1 udp 1 1.2.3.4 70000 typ host", "candidate:1 1 udp 1 1.2.3.4 5 typ bogus", "x" * 5000):
        with raises_coded(PeerError, "ice-candidate-malformed"):
            parse_candidate(junk)
