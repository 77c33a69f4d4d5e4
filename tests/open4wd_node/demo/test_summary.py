"""The demo's final figures (``--json`` prints them as one object): nodes named by number, the agreed
hashes every finisher saw, leaves and outcomes."""

import json

from open4wd_node.demo.runner import NodeRun, summarize

PEERS = ["z6MkPeerZero", "z6MkPeerOne", "z6MkPeerTwo"]


def result(peer: str, outcome: str, agreed: int, disagreements: int = 0) -> dict:
    standings = [
        {"rank": 1, "peer": PEERS[0], "points": 3, "finishFrames": 1800, "status": "finished", "rounds": ["finished"]},
        {"rank": 2, "peer": PEERS[1], "points": 2, "finishFrames": 1900, "status": "finished", "rounds": ["finished"]},
        {"rank": 3, "peer": PEERS[2], "points": 1, "finishFrames": 36000, "status": "desync", "rounds": ["desync"]},
    ]
    return {"event": "result", "peer": peer, "outcome": outcome, "agreed_hashes": agreed, "disagreements": disagreements,
            "standings": standings, "log": f"/logs/{peer}.o4wlog", "max_lag": 3, "rollbacks": 7}


def test_the_summary_names_nodes_by_number_and_counts_what_every_finisher_agreed_on():
    runs = [NodeRun(0, [result(PEERS[0], "finished", 15, 3)], 0),
            NodeRun(1, [{"event": "leave", "peer": PEERS[2], "reason": "desync"}, result(PEERS[1], "finished", 14, 3)], 0),
            NodeRun(2, [result(PEERS[2], "persistent-desync", 2, 3)], 1)]
    summary = json.loads(json.dumps(summarize(runs, 41.26)))  # what --json prints
    assert summary["nodes"] == 3 and summary["finished"] == 2
    assert summary["agreed_hashes"] == 14  # the fewest among the finishers
    assert summary["disagreements"] == 9 and summary["rollbacks"] == 21 and summary["max_lag"] == 3
    assert summary["leaves"] == [{"node": 1, "peer": 2, "reason": "desync"}]
    assert summary["outcomes"] == {"0": "finished", "1": "finished", "2": "persistent-desync"}
    assert [(row["node"], row["status"]) for row in summary["standings"]] == [(0, "finished"), (1, "finished"), (2, "desync")]
    assert summary["elapsed_s"] == 41.3 and len(summary["logs"]) == 3


def test_a_node_that_died_without_a_result_is_named_by_its_exit():
    runs = [NodeRun(0, [result(PEERS[0], "finished", 5)], 0), NodeRun(1, [], -9)]
    summary = summarize(runs, 1.0)
    assert summary["outcomes"] == {"0": "finished", "1": "exit -9"} and summary["finished"] == 1


def test_the_cpu_figures_name_each_node_by_number_beside_the_mean_and_the_worst():
    def cpu(per_frame_us: float, verify: float) -> dict:
        return {"frames": 100, "per_frame_us": per_frame_us, "parts_us": {"verify": verify, "shell": per_frame_us - verify},
                "shares": {}}

    runs = [NodeRun(0, [{**result(PEERS[0], "finished", 5), "cpu": cpu(900.0, 100.0)}], 0),
            NodeRun(1, [], -9),
            NodeRun(2, [{**result(PEERS[2], "finished", 5), "cpu": cpu(1100.0, 300.0)}], 0)]
    figures = json.loads(json.dumps(summarize(runs, 1.0)))["cpu"]
    assert figures["by_node_us"] == {"0": 900.0, "2": 1100.0}  # node 1 died before its result
    assert figures["per_frame_us"] == 1000.0 and figures["worst_per_frame_us"] == 1100.0
    assert figures["parts_us"] == {"verify": 200.0, "shell": 800.0} and figures["frames"] == 100
