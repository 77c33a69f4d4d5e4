"""The peer table the session and its recovery share: the questions both ask of the statuses."""

from protocol.race.peers import PeerStatus, PeerTable


def test_the_table_answers_from_the_statuses_and_active_from():
    table = PeerTable("zA", ("zA", "zB", "zC", "zD"))
    assert table.others == ("zB", "zC", "zD") and table.present_count() == 4 and not table.any_lost()
    table.statuses["zB"] = PeerStatus.LOST
    table.statuses["zC"] = PeerStatus.REMOVED
    table.active_from["zD"] = 100
    assert table.present_count() == 2 and table.removed_count() == 1 and table.any_lost()
    assert table.active_others() == ["zD"] and table.remaining_others() == ["zB", "zD"]
    assert table.required("zD", 100) and not table.required("zD", 99) and not table.required("zB", 200)
    table.statuses["zB"] = PeerStatus.REJOINING
    assert table.any_lost() and not table.is_active("zB")
