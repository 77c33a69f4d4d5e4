"""Compatibility: the six-field build version and its rule, version collection between members, asset schema versions."""
