"""The race (spec/netcode.md): the sans-IO session of signed inputs, prediction, rollback, votes, recovery and results."""
