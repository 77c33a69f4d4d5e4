"""The command line: global options, one module per command, the values and choices it accepts."""
