import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import UserError
from harness.model.params import parse_assignments
from harness.running.matrix import Overrides, Spec, apply_overrides, expand, load_spec


def test_lists_become_axes_and_ids_are_stable(tmp_path):
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(
        'duration = 1.5\nrepeats = 2\n[[matrix]]\nsuite = "synthetic"\n'
        'params = { kind = "spin", workers = [1, 2], slowdown = [1.0, 2.0] }\n'
    )
    cells = expand(load_spec(spec_file))
    assert len(cells) == 4
    assert {c.params["workers"] for c in cells} == {1, 2}
    assert all(c.duration == 1.5 and c.repeats == 2 for c in cells)
    # the deadline leaves room for the measured window, the automatic warm-up's cap and 60 s
    assert all(c.timeout == pytest.approx(1.5 + 10 + 60) and c.steady == "auto" for c in cells)
    again = expand(load_spec(spec_file))
    assert [c.id for c in cells] == [c.id for c in again]
    assert len({c.id for c in cells}) == 4


def test_flags_override_the_spec():
    spec = Spec.model_validate({"duration": 9, "matrix": [{"suite": "synthetic", "params": {"workers": [1, 2]}}]})
    ov = Overrides(axes={"workers": ["4", "8"]}, duration=0.5)
    cells = expand(apply_overrides(spec, ov))
    assert [c.params["workers"] for c in cells] == [4, 8]
    assert all(c.duration == 0.5 for c in cells)


def test_default_values_fill_the_id_so_explicit_defaults_match():
    a = expand(apply_overrides(Spec(), Overrides(suite="synthetic")))
    b = expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes={"workers": ["1"]})))
    assert a[0].id == b[0].id


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        ({"workers": ["abc"]}, ["workers", "integer"]),
        ({"nope": ["1"]}, ["unknown key 'nope'", "workers"]),
        ({"kind": ["spinn"]}, ["kind", "spin", "pingpong"]),
        ({"workers": ["-1"]}, ["workers", ">= 0"]),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(axes, words):
    with pytest.raises(UserError) as err:
        expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes=axes)))
    for word in words:
        assert word in str(err.value)


def test_unknown_suite_lists_the_available_ones():
    with pytest.raises(UserError, match="available: .*synthetic"):
        apply_overrides(Spec(), Overrides(suite="chess"))


def test_spec_typos_and_bad_toml_are_user_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("duraton = 3\n")
    with pytest.raises(UserError, match="duraton"):
        load_spec(bad)
    bad.write_text("[[matrix]\n")
    with pytest.raises(UserError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(UserError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=4))
def test_set_parsing_never_crashes_with_anything_but_a_user_error(items):
    try:
        axes = parse_assignments(items)
        expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes=axes)))
    except UserError as exc:
        assert str(exc)


@pytest.mark.parametrize(
    ("target", "extra", "words"),
    [
        ("nash_conv<=0.05", {}, None),
        ("nash_conv=0.05", {}, "METRIC<=VALUE"),
        ("nash_conv>=0.05", {}, "better lower; write nash_conv<="),
        ("mean_return>=100", {}, "declares no quality metric 'mean_return'; it declares: nash_conv (lower"),
        ("nash_conv<=0.05", {"work": 1000}, "exclude each other"),
    ],
)
def test_targets_name_a_declared_quality_metric_the_right_way(target, extra, words):
    overrides = Overrides(suite="mccfr", target=target, **extra)
    if words is None:
        (cell,) = expand(apply_overrides(Spec(), overrides))
        assert cell.target == target and cell.duration == 120.0 and cell.work is None
        assert cell.budget()["target"] == target and "steady" not in cell.budget()
        return
    with pytest.raises(UserError, match=words.replace("(", r"\(")):
        expand(apply_overrides(Spec(), overrides))


def test_a_target_on_the_command_line_replaces_the_specs_fixed_work():
    spec = Spec.model_validate({"work": 1000, "matrix": [{"suite": "mccfr", "work": 500, "params": {}}]})
    (cell,) = expand(apply_overrides(spec, Overrides(target="nash_conv<=0.1")))
    assert cell.work is None and cell.target == "nash_conv<=0.1" and cell.duration == 120.0
