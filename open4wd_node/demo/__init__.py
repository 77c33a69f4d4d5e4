"""``open4wd-node demo``: N real node processes that form a room and race, with their live table."""
