"""The command line: global options, one module per command, the values and choices it accepts."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "run_bake": "asset_actions",
    "run_builtin": "asset_actions",
    "run_import": "asset_actions",
    "run_inspect": "asset_actions",
    "run_loadout": "asset_actions",
    "run_validate": "asset_actions",
    "CommandLineParser": "main",
    "build_parser": "main",
    "command_modules": "main",
    "main": "main",
    "node_context": "main",
    "run": "main",
    "play_options": "play",
    "room_identity": "play",
    "run_node": "play",
})
