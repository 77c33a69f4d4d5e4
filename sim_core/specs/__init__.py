"""Race-time descriptions of what races: materials, tracks and their route ribbons, assembled cars (exact integers)."""
