"""A race whose room never formed is judged with the demo's own error, however deep the nurseries that
raised it nested it (the row then says why, instead of a crash of the task)."""

from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.race import _first


def test_the_demo_s_error_is_found_inside_nested_groups():
    error = UserError("demo-failed", "node 1 ended before its race started")
    assert _first(ExceptionGroup("race", [ExceptionGroup("demo", [error])])) is error
    assert _first(ExceptionGroup("demo", [error, UserError("other", "later")])) is error
