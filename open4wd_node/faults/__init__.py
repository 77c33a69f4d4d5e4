"""Fault injection for the soak, the demo and the tests: adapters that wrap the node's production objects from
outside (the round's world, the race's dialler and doorway, the links' carriers, the pump's stand-stills),
installed by the node (``open4wd_node.node``) when its options ask (``--fault``) or by a test. No production type
carries a fault of its own."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "FaultKind": "plan",
    "NONDETERMINISM_ENV": "plan",
    "NodeFault": "plan",
    "nondeterministic_frame": "plan",
    "parse_fault": "plan",
    "FaultWorld": "world",
    "FrozenCarrier": "links",
    "LinkFaults": "links",
    "RaceFaults": "race",
})
