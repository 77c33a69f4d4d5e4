"""The node as an application object: ``Node`` composes links, rooms, races, spectators and logs; the
command line, the tests and embedders run it."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Links": "links",
    "TcpLinks": "links",
    "ControlTee": "match",
    "PlayOptions": "match",
    "play_match": "match",
    "watch_match": "match",
    "Node": "node",
    "NodeResult": "node",
})
