"""A room over real links: the driver of the sans-IO room machines, hosting and joining, notices."""
