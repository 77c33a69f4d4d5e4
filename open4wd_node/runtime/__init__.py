"""The process: configuration, data directory, logging, signals, the trio entry point, blocking work, files."""
