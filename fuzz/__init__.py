"""Coverage-guided fuzzers for every door of the node: what a peer, a file or a UI can feed it.

``fuzz.harness`` holds the invariant (only a ``CodedError`` escapes, every input ends within its time
limit, memory stays bounded), ``fuzz.doors`` one target per door, ``fuzz.corpus`` their seeds (real
inputs, made by ``python -m fuzz.seeds``), ``fuzz.run`` the campaigns (atheris, or the seeded mutator).
See fuzz/README.md.
"""
