"""The trio shell of open4wd-node: sockets, clocks, tasks, files, CLI, logging."""
