"""One module per CLI command; each exposes ``register(subparsers)`` (see ``open4wd_node.cli.main``)."""
