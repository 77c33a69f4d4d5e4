"""A link's own protocol: the sans-IO mutual authentication of the two ends."""
