"""One frame of the simulation: per-car constants, motion, heat, contact, track rules, ranking, inputs."""
