"""How many races the soak runs at once: from the CPU the races took, measured, not from the core count."""

from open4wd_node.soak.cluster import MAX_AT_ONCE, CpuPacing


def test_the_first_race_runs_alone_then_as_many_as_the_cores_hold():
    pacing = CpuPacing(cores=2, utilisation=0.85)
    assert pacing.at_once() == 1  # nothing measured yet: one race, alone
    pacing.record(cpu_s=20.0, elapsed_s=60.0)  # a third of a core for a minute
    assert pacing.at_once() == 5  # 1.7 cores / (20 / 60)
    pacing.record(cpu_s=40.0, elapsed_s=130.0)  # a later race, slowed by the others: its CPU counts, not its length
    assert pacing.at_once() == 3  # 1.7 / (30 / 60)


def test_a_race_that_needs_more_than_the_budget_still_runs_and_a_cheap_one_is_bounded():
    heavy = CpuPacing(cores=2)
    heavy.record(cpu_s=300.0, elapsed_s=60.0)  # five cores' worth
    assert heavy.at_once() == 1
    cheap = CpuPacing(cores=64)
    cheap.record(cpu_s=0.1, elapsed_s=60.0)
    assert cheap.at_once() == MAX_AT_ONCE
