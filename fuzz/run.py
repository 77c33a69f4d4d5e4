"""Run a fuzz campaign on one target.

    python -m fuzz.run TARGET [--engine atheris|mutate] [--runs N] [--seed S] [--out DIR] [--instrument-all]
                          [-- LIBFUZZER ARGS]
    python -m fuzz.run TARGET --replay FILE

``atheris`` (the default when it is installed): coverage-guided, the modules of the door's scope
instrumented (``fuzz.instrument``; ``--instrument-all``: every package), the committed corpus as seeds
(new inputs go to ``--out``, a finding to ``crash-*``/``timeout-*`` files there); a per-input limit of
``INPUT_TIME_LIMIT_S`` and a 2 GiB RSS limit are passed to libFuzzer, and its ``cov:`` figure is the
number of edges reached. ``mutate``: the seeded mutator of the smoke tests,
without coverage, for machines where atheris does not install. Exit status 1 when anything but a
``CodedError`` escaped or an input ran past its time limit.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path


def _atheris(name: str, runs: int, out: Path, extra: list[str], everything: bool = False) -> int:
    import atheris

    from fuzz.instrument import EVERYTHING, instrument

    instrument(name, EVERYTHING if everything else None)  # the door's scope (fuzz.instrument), or all packages
    from fuzz.memo import remember_signature_checks

    remember_signature_checks()
    import traceback

    from fuzz.doors import target as find
    from fuzz.harness import INPUT_TIME_LIMIT_S, warm_up
    from open4wd_base.errors import CodedError

    chosen = find(name)
    warm = warm_up(chosen)  # its fixtures, built before libFuzzer's per-input clock starts
    if warm is not None:
        traceback.print_exception(warm.error)
        return 1

    def test_one_input(data: bytes) -> None:
        try:
            chosen.one_input(data)
        except CodedError:
            pass

    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.argv[0], str(out), str(chosen.corpus_dir), f"-runs={runs}", f"-timeout={int(INPUT_TIME_LIMIT_S)}",
            "-rss_limit_mb=2048", f"-artifact_prefix={out}/", "-print_final_stats=1", *extra]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
    return 0


def _mutate(name: str, runs: int, seed: int) -> int:
    from fuzz.doors import target as find
    from fuzz.harness import bound_memory, run_mutator
    from fuzz.memo import remember_signature_checks

    bound_memory()
    remember_signature_checks()
    report = run_mutator(find(name), runs, seed)
    print(f"{name}: {report.executions} executions in {report.seconds:.1f} s, {len(report.findings)} findings")
    for finding in report.findings[:20]:
        print("  " + finding.describe())
    return 1 if report.findings else 0


def _replay(name: str, path: Path) -> int:
    import traceback

    from fuzz.doors import target as find
    from fuzz.harness import check

    finding = check(find(name), path.read_bytes())
    if finding is None:
        print(f"{name}: {path} ends with a coded refusal or none")
        return 0
    traceback.print_exception(finding.error)
    return 1


ATHERIS_INSTALL = "pip install '.[fuzz]'"


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the campaign."""
    args_in = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, extra = args_in[:cut], args_in[cut + 1 :]
    parser = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("--engine", choices=("atheris", "mutate"), default=None,
                        help="atheris (coverage-guided; the default when installed) or mutate (no coverage)")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="where atheris keeps new inputs and findings")
    parser.add_argument("--replay", type=Path, default=None, help="run one input (a finding) and show what escaped")
    parser.add_argument("--instrument-all", action="store_true",
                        help="instrument every package, not the door's scope (what campaigns did before the scopes)")
    args = parser.parse_args(args_in)
    if args.replay is not None:
        return _replay(args.target, args.replay)
    have_atheris = importlib.util.find_spec("atheris") is not None
    if args.engine == "atheris" and not have_atheris:
        parser.error(f"--engine atheris needs atheris, which is not installed here: {ATHERIS_INSTALL}")
    if args.engine is None:
        args.engine = "atheris" if have_atheris else "mutate"
        if not have_atheris:  # say so: a campaign without coverage finds far less
            print(f"fuzz.run: atheris is not installed, so this runs the mutate engine, which has no coverage "
                  f"feedback ({ATHERIS_INSTALL} for coverage-guided fuzzing)", file=sys.stderr)
    if args.engine == "atheris":
        return _atheris(args.target, args.runs, args.out or Path("fuzz-out") / args.target, extra, args.instrument_all)
    return _mutate(args.target, args.runs, args.seed)


if __name__ == "__main__":
    sys.exit(main())
