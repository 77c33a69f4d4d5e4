"""``open4wd-node version``: the six compared fields and the diagnostics, as text or the spec's JSON."""

from __future__ import annotations



def run(args, ctx) -> int:
    import json

    from open4wd_node.runtime.build_info import own_version_info

    info = own_version_info(ctx.config.economy_config_version)
    if args.json:
        print(json.dumps(info.to_wire(), sort_keys=False))
        return 0
    print(f"open4wd-node {info.client_version}")
    for name, value in info.to_wire().items():
        if name != "client_version":
            print(f"  {name:<24} {value}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("version", help="print this node's version record (the six compared fields)")
    parser.add_argument("--json", action="store_true", help="print the ClientVersionInfo object (8 keys)")
    parser.set_defaults(run=run)
