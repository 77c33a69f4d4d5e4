"""Assets on this node: the content store, the derived cache's folder, transfer between members, the room's checks, cars."""
