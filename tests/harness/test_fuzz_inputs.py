"""Fuzzed sweep specs (TOML text) and `--set` values through the real CLI: every input
either parses or exits 2 with a message naming the key and what is allowed; never a
traceback. Nothing runs: a spec that parses stops where the run directory would be made."""

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.running import execute
from suites.synthetic import Params

FIELDS = list(Params.model_fields)
BUDGET = ["label", "duration", "warmup", "work", "repeats", "timeout", "memory_limit_mb"]
FUZZ = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], database=None
)


class Parsed(Exception):
    """The input was valid: the sweep would start here."""


@pytest.fixture
def invoke(monkeypatch):
    def refuse(*args, **kwargs):
        raise Parsed

    monkeypatch.setattr(execute, "new_run", refuse)  # harness sweep imports it when it runs
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args], catch_exceptions=True)


def assert_clear_or_parsed(result, keys):
    if isinstance(result.exception, Parsed):
        return
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    text = result.output
    assert "Traceback" not in text, text
    if "Invalid value for" in text:  # Click's own check of a typed flag: it names the flag
        assert any(k in text for k in keys), text
        return
    assert text.startswith("error: "), text
    names_key = any(k in text or repr(k) in text for k in keys) or "not valid TOML" in text or "--set" in text
    says_allowed = any(
        w in text for w in ("allowed", "Top-level keys", "available", "not valid TOML", "expects", "[[matrix]]")
    )
    assert names_key and says_allowed, text


# ---------------------------------------------------------------------- TOML specs
scalars = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=8),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3))
keys = st.one_of(st.sampled_from(FIELDS), st.text(string.ascii_letters + "_-", min_size=1, max_size=8))


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(toml_value(v) for v in value) + "]"


@st.composite
def specs(draw):
    top = draw(st.dictionaries(st.one_of(st.sampled_from(BUDGET), keys), values, max_size=3))
    entries = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["synthetic", "nosuch"]),
                st.dictionaries(keys, values, max_size=3),
                st.dictionaries(st.sampled_from(BUDGET[1:]), values, max_size=1),
            ),
            max_size=2,
        )
    )
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in top.items()]
    names = list(top)
    for suite, params, budget in entries:
        lines.append("[[matrix]]")
        lines.append(f'suite = "{suite}"')
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in budget.items()]
        if params:
            lines.append(
                "params = { " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in params.items()) + " }"
            )
        names += [suite, *params, *budget]
    return "\n".join(lines) + "\n", names


@FUZZ
@given(spec=specs())
def test_structured_specs_parse_or_exit_2_naming_the_key(invoke, tmp_path, spec):
    text, names = spec
    path = tmp_path / "spec.toml"
    path.write_text(text)
    assert_clear_or_parsed(invoke("sweep", path, "--out", tmp_path / "out"), [*names, "matrix", str(path)])


@FUZZ
@given(text=st.text(max_size=80))
def test_arbitrary_text_as_a_spec_exits_2(invoke, tmp_path, text):
    path = tmp_path / "spec.toml"
    path.write_text(text, errors="surrogatepass")
    assert_clear_or_parsed(invoke("sweep", path, "--out", tmp_path / "out"), [str(path), "matrix"])


# ---------------------------------------------------------------------- --set and flags
printable = st.text(string.printable.strip() + " é", min_size=0, max_size=12)


@FUZZ
@given(key=st.one_of(st.sampled_from(FIELDS), printable), value=printable)
def test_set_values_parse_or_exit_2_naming_the_key(invoke, tmp_path, key, value):
    item = f"{key}={value}"
    result = invoke("sweep", "--suite", "synthetic", "--set", item, "--out", tmp_path / "out")
    assert_clear_or_parsed(result, [item.partition("=")[0].strip(), item])


@FUZZ
@given(
    flag=st.sampled_from(["--duration", "--warmup", "--timeout", "--memory-limit", "--repeats", "--work"]),
    number=st.one_of(st.floats(), st.integers(-5, 10**6)),
)
def test_budget_flags_parse_or_exit_2_naming_the_flag(invoke, tmp_path, flag, number):
    result = invoke("sweep", "--suite", "synthetic", flag, str(number), "--out", tmp_path / "out")
    key = flag.removeprefix("--").replace("-", "_")
    assert_clear_or_parsed(result, [flag, key, key.replace("memory_limit", "memory_limit_mb")])
