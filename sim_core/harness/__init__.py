"""Headless drivers of a world: reproducible input streams and the GGRS-style sync test."""
