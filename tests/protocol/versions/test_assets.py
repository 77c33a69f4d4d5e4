"""B-axis notices with synthetic walls, yanks and minimums (spec/rooms.md §6)."""

from protocol.versions.assets import (
    AssetVersionPolicy,
    compatibility_class,
    downgrade_target,
    effective_min,
    pre_race_version_check,
)

ASSETS = {
    "cid-t1": ("tire", 1), "cid-t2": ("tire", 2), "cid-t3": ("tire", 3),
    "cid-m1": ("motor", 1), "cid-m2": ("motor", 2), "cid-c1": ("chassis", 1),
}


def check(refs, policy):
    return pre_race_version_check(
        refs, policy, lambda r: ASSETS.get(r, (None, None))[1], lambda r: ASSETS.get(r, (None, None))[0]
    )


def test_spec_example_tires_1_2_3_with_wall_3_downgrade_to_2():
    assert downgrade_target([1, 2, 3], [3]) == 2
    assert compatibility_class(3, [3]) == 1 and compatibility_class(2, [3]) == 0


def test_no_downgrade_within_one_class():
    assert downgrade_target([1, 2], [3]) is None
    assert downgrade_target([], [3]) is None


def test_yanked_lowest_class_steps_down():
    assert downgrade_target([1, 2, 3], [3], yanked=[2]) == 1
    assert downgrade_target([2, 3], [3], yanked=[2]) == 1
    assert downgrade_target([2, 3], [3], yanked=[1, 2]) is None


def test_effective_min_with_yank():
    assert effective_min(3, yanked=[3]) == 2
    assert effective_min(3, yanked=[2, 3]) == 1
    assert effective_min(2) == 2


def test_report_notices_and_unusable():
    policy = AssetVersionPolicy(walls={"tire": (3,)}, min_versions={"motor": 2})
    report = check(["cid-t1", "cid-t3", "cid-m1", "cid-m2", "builtin:tire-01", "local:x", "unknown"], policy)
    assert report.downgrade_by_type == {"tire": 1}
    assert report.unusable == ["cid-m1"] and not report.ok
    drift = check(["cid-t1", "cid-t2", "cid-c1"], AssetVersionPolicy())
    assert drift.schema_drift_types == ["tire"] and drift.downgrade_by_type == {} and drift.ok


def test_empty_policy_is_silent_like_production():
    report = check(list(ASSETS), AssetVersionPolicy())
    assert report.ok and not report.downgrade_by_type and report.schema_drift_types == ["motor", "tire"]
    assert check(["cid-t1", "builtin:x"], AssetVersionPolicy()).schema_drift_types == []


def test_min_on_a_yanked_version_keeps_the_type_usable():
    policy = AssetVersionPolicy(yanked={"tire": frozenset({3})}, min_versions={"tire": 3})
    assert check(["cid-t2"], policy).ok
    assert not check(["cid-t1"], policy).ok
