"""The simulated state's field layout and its canonical saved bytes."""
