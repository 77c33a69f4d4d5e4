"""A match over the race mesh: the runner, the mesh, the frame pump, the round's world, the race log and replay."""
