"""Sans-IO protocol core: identity, canonical encodings, signed envelopes, versions, wire, rooms, races.

Nothing in this package touches sockets, clocks or files except where a function is explicitly about a
file (the identity key file); time is always passed in as an argument.
"""
