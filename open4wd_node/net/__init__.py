"""Links between nodes over TCP: addresses, the authenticated link and its rules, the listener, outboxes."""
