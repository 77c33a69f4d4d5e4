import pytest

from protocol.identity.consensus import canonical_peers, latest_final_frame, match_result_threshold, quorum, within_tail
from protocol.errors import ProtocolError


def test_quorums_from_the_spec():
    assert [quorum(n) for n in [1, 2, 3, 4, 8]] == [1, 2, 2, 3, 5]


@pytest.mark.parametrize(
    ("terminal", "latest"), [(0, 0), (8, 0), (127, 0), (128, 120), (247, 120), (248, 240), (3608, 3600), (3607, 3480)]
)
def test_latest_final_frame(terminal, latest):
    assert latest_final_frame(terminal) == latest


def test_within_tail():
    assert within_tail(240, 250) and within_tail(120, 250)
    assert not within_tail(0, 250) and not within_tail(241, 250) and not within_tail(360, 250)
    assert within_tail(0, 5) and not within_tail(120, 5)
    assert within_tail(0, 130) and within_tail(120, 130)


def test_canonical_peers():
    assert canonical_peers(["zb", "za", "zb", "zA"]) == ["zA", "za", "zb"]


def test_match_result_threshold_ignores_the_reason():
    assert match_result_threshold(["a", "b", "c"], []) == 2
    assert match_result_threshold(["a", "b"], [{"peerId": "c", "reason": "network"}, {"peerId": "d", "reason": "voluntary"}]) == 3
    assert match_result_threshold(["a", "b"], [{"peerId": "b", "reason": "network"}]) == 2
    assert match_result_threshold(["a", "b", "c", "d"], []) == 3


@pytest.mark.parametrize(
    "call",
    [
        lambda: quorum(-1),
        lambda: quorum("3"),
        lambda: quorum(True),
        lambda: latest_final_frame(-5),
        lambda: within_tail(1.0, 5),
        lambda: canonical_peers("abc"),
        lambda: canonical_peers([1, 2]),
        lambda: match_result_threshold(["a"], [{"reason": "network"}]),
        lambda: match_result_threshold(["a"], "x"),
        lambda: match_result_threshold(None, []),
    ],
)
def test_bad_inputs_are_coded(call):
    with pytest.raises(ProtocolError) as info:
        call()
    assert info.value.code == "consensus-input-invalid"
