"""The layout's indices are written out as ``Final`` integers (so the compiled step reads them as
constants): each must be its field name's position, and the sizes the lengths of the name tuples."""

import sim_core.state.layout as layout

CAR_INDEX_NAMES = (
    "STATUS", "ARC", "LAT", "H", "VS", "VLAT", "VH", "AIR_FRAMES", "OUTSIDE", "REMAINING_Q", "LAPS", "NEXT_CP", "ARMED",
    "PROGRESS", "FINISHED_FRAME", "PREV_X", "PREV_Y", "PREV_Z", "LEGAL_ARC", "LEGAL_LAT", "PENALTY_KIND", "PENALTY_TIMER",
    "BROKEN_MASK", "RETIRED_FRAME", "DESTRUCTIONS",
)
WORLD_INDEX_NAMES = ("W_FRAME", "W_DONE", "W_END_REASON", "W_ENDGAME", "W_SETTLED", "W_SEED", "W_WEATHER_ACC",
                     "W_WEATHER_ORDINAL")
PATCH_INDEX_NAMES = ("PA_BORN", "PA_EXPIRE", "PA_ARC", "PA_LAT")
PART_INDEX_NAMES = ("P_TEMP", "P_FATIGUE", "P_FATIGUE_REM", "P_BREAK_FRAME")
PROJECTILE_INDEX_NAMES = ("PR_STATE", "PR_RELEASED", "PR_ARC", "PR_LAT", "PR_H", "PR_VS", "PR_VLAT", "PR_VH", "PR_CLEARED")


def test_every_index_is_its_field_s_position():
    for names, fields in ((CAR_INDEX_NAMES, layout.CAR_FIELDS), (WORLD_INDEX_NAMES, layout.WORLD_FIELDS),
                          (PART_INDEX_NAMES, layout.PART_FIELDS), (PATCH_INDEX_NAMES, layout.PATCH_FIELDS),
                          (PROJECTILE_INDEX_NAMES, layout.PROJECTILE_FIELDS)):
        assert len(names) == len(fields)
        assert [getattr(layout, name) for name in names] == list(range(len(fields)))


def test_the_field_names_match_their_indices_by_meaning():
    """Spot checks of meaning, so that a field inserted in the names with its index constant put elsewhere
    is caught even though the counts agree."""
    assert layout.CAR_FIELDS[layout.ARC] == "arc_um" and layout.CAR_FIELDS[layout.RETIRED_FRAME] == "retired_frame"
    assert layout.CAR_FIELDS[layout.BROKEN_MASK] == "broken_mask" and layout.CAR_FIELDS[layout.PREV_Z] == "prev_com_z_um"
    assert layout.WORLD_FIELDS[layout.W_SEED] == "seed" and layout.PART_FIELDS[layout.P_BREAK_FRAME] == "break_frame"


def test_the_sizes_are_the_name_tuples_lengths():
    assert layout.CAR_HEADER == len(layout.CAR_FIELDS)
    assert layout.WORLD_HEADER == len(layout.WORLD_FIELDS)
    assert layout.PATCH_STRIDE == len(layout.PATCH_FIELDS)
    assert layout.patch_field(3, layout.PA_LAT) == len(layout.WORLD_FIELDS) + 3 * len(layout.PATCH_FIELDS) + 3
    assert layout.world_length(layout.PATCH_POOL) == len(layout.WORLD_FIELDS) + 50 * len(layout.PATCH_FIELDS)
    assert layout.PATCH_FIELDS[layout.PA_EXPIRE] == "expire_frame"
    assert layout.PROJECTILE_STRIDE == len(layout.PROJECTILE_FIELDS)
    assert layout.world_length(layout.PATCH_POOL, 3) == layout.world_length(layout.PATCH_POOL) + 3 * len(layout.PROJECTILE_FIELDS)
    assert layout.PROJECTILE_FIELDS[layout.PR_CLEARED] == "cleared"
    assert layout.PART_STRIDE == len(layout.PART_FIELDS)
    assert layout.part_field(2, layout.P_FATIGUE) == len(layout.CAR_FIELDS) + 2 * len(layout.PART_FIELDS) + 1
