"""What a node shows its user: events as JSON lines or text, and the live view."""
