"""Every numeric LLM setting, and the price table, refuse what is not a usable number in one line
(issue 49, items 3 and 4).

Old behaviour these tests catch: ``KNOWSIM_LLM_TIMEOUT=nan`` / ``inf`` / ``1e309`` were accepted, then
every call failed with a long traceback and the run was stored failed with the raw exception;
``KNOWSIM_LLM_RPM=nan`` switched the rate limit off silently; a huge number (``1e20`` seconds, a
4,000-digit reply cap) was taken as given. ``KNOWSIM_LLM_PRICES='{"m1": [1e308, 1e308]}'`` priced a
run at inf (``runs --json`` printed ``Infinity``, not JSON) and ``["NaN", 1]`` could not be stored,
leaving the run interrupted. The end-to-end tests run the command against a real local server.
"""

from __future__ import annotations

import json
import math

import pytest

from knowsim_core.errors import ConfigError
from knowsim_core.llm import LLMSettings
from knowsim_core.llm.prices import MAX_PRICE_USD, PriceTable
from knowsim_core.llm.settings import LIMITS, MAX_CONTEXT_TOKENS, parse_max_tokens
from tests.fakes.llm_server import llm_server  # noqa: F401 — fixture

# what no numeric setting may be: (name, text)
BAD = [
    ("nan", "nan"), ("NaN", "NaN"), ("inf", "inf"), ("-inf", "-inf"), ("over-float-range", "1e309"),
    ("huge", "99999999999999999999"), ("4000-digits", "9" * 4000), ("negative", "-1"), ("text", "abc"),
    ("empty-ish", "."), ("superscript", "²"), ("underscores", "1_000"), ("arabic-digits", "١٢"),
]
# every numeric KNOWSIM_LLM_* variable but the reply caps (below); named here, not read from the code
NUMERIC = ["KNOWSIM_LLM_CONTEXT", "KNOWSIM_LLM_MAX_CONCURRENCY", "KNOWSIM_LLM_MAX_REPLY_BYTES",
           "KNOWSIM_LLM_MAX_RETRIES", "KNOWSIM_LLM_RPM", "KNOWSIM_LLM_TIMEOUT"]


def refused(env: dict[str, str], var: str) -> str:
    with pytest.raises(ConfigError) as err:
        LLMSettings.from_sources(env=env)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(var) and len(msg) < 400, msg
    return msg


def test_the_table_covers_every_numeric_setting_the_docstring_lists():
    from knowsim_core.llm import settings

    documented = {w.strip(",") for w in (settings.__doc__ or "").split() if w.startswith("KNOWSIM_LLM_")}
    not_numeric = {"KNOWSIM_LLM_CACHE", "KNOWSIM_LLM_STRUCTURED", "KNOWSIM_LLM_MAX_TOKENS", "KNOWSIM_LLM_PRICES"}
    assert documented - not_numeric == set(NUMERIC) == set(LIMITS)


@pytest.mark.parametrize("var", NUMERIC)
@pytest.mark.parametrize("name, text", BAD, ids=[b[0] for b in BAD])
def test_a_numeric_setting_that_is_not_a_usable_number_is_refused_in_one_line(var, name, text):
    msg = refused({var: text}, var)
    assert "must be" in msg and "at most" in msg


@pytest.mark.parametrize("var", NUMERIC)
def test_a_numeric_setting_is_refused_just_past_its_range_and_kept_at_its_edges(var):
    limit = LIMITS[var]
    kind = limit.kind
    if not limit.above:
        assert getattr(LLMSettings.from_sources(env={var: str(kind(limit.low))}), limit.attr) == limit.low
    assert getattr(LLMSettings.from_sources(env={var: str(kind(limit.high))}), limit.attr) == limit.high
    step = 1 if kind is int else 0.5
    refused({var: str(kind(limit.high + step))}, var)
    refused({var: str(kind(limit.low - step) if not limit.above else kind(limit.low))}, var)


@pytest.mark.parametrize("name, text", BAD, ids=[b[0] for b in BAD])
def test_the_reply_caps_refuse_the_same_values_per_role_and_for_every_role(name, text):
    for value in (text, f"assistant=300,user={text}"):
        with pytest.raises(ConfigError) as err:
            parse_max_tokens(value)
        assert str(err.value).startswith("KNOWSIM_LLM_MAX_TOKENS") and "\n" not in str(err.value)
        assert len(str(err.value)) < 400


def test_the_reply_caps_keep_their_range():
    assert parse_max_tokens(str(MAX_CONTEXT_TOKENS))["judge"] == MAX_CONTEXT_TOKENS
    assert parse_max_tokens("user=1") == {"user": 1}
    for bad in (str(MAX_CONTEXT_TOKENS + 1), "user=0", "0"):
        with pytest.raises(ConfigError, match="KNOWSIM_LLM_MAX_TOKENS"):
            parse_max_tokens(bad)


@pytest.mark.parametrize("field, value", [
    ("timeout_s", math.nan), ("timeout_s", math.inf), ("connect_timeout_s", math.nan),
    ("requests_per_minute", math.nan), ("requests_per_minute", math.inf), ("max_concurrency", 10**30),
    ("max_retries", True), ("max_reply_bytes", 4096.0),
])
def test_settings_made_in_code_are_held_to_the_same_ranges(field, value):
    """The sidebar and the batch build settings with ``with_overrides``, not from text."""
    with pytest.raises(ConfigError, match="must be"):
        LLMSettings.from_sources(env={}).with_overrides(**{field: value})


# ---------------------------------------------------------------------- prices
@pytest.mark.parametrize("prices, why", [
    ('{"m1": [1e308, 1e308]}', "finite"), ('{"m1": [1e999, 1]}', "finite"), ('{"m1": [NaN, 1]}', "finite"),
    ('{"m1": [Infinity, 0]}', "finite"), ('{"m1": [-1, 1]}', "finite"), (f'{{"m1": [{MAX_PRICE_USD * 2}, 1]}}', "finite"),
    ('{"m1": [1' + "0" * 400 + ", 1]}", "finite"),
    ('{"m1": ["NaN", 1]}', "two numbers"), ('{"m1": ["0.15", 0.6]}', "two numbers"), ('{"m1": [true, 1]}', "two numbers"),
    ('{"m1": [1]}', "two numbers"), ('{"m1": [1, 2, 3]}', "two numbers"), ('{"m1": null}', "two numbers"),
    ('{"m1": {"in": 1, "out": 2}}', "two numbers"),
    ("[1, 2]", "an object"), ('"m1"', "an object"), ("[" * 100_000, "JSON"), ("{m1: [1, 2]}", "JSON"),
])
def test_prices_must_be_finite_non_negative_numbers(prices, why):
    msg = refused({"KNOWSIM_LLM_PRICES": prices}, "KNOWSIM_LLM_PRICES")
    assert why in msg


def test_prices_at_the_edges_are_kept_and_a_table_made_in_code_is_checked_too():
    s = LLMSettings.from_sources(env={"KNOWSIM_LLM_PRICES": json.dumps({"m1": [0, MAX_PRICE_USD], "m2": [1, 2]})})
    assert s.prices.price("m1") == (0.0, MAX_PRICE_USD) and s.prices.price("m2") == (1.0, 2.0)
    assert math.isfinite(s.prices.cost("m1", 10**9, 10**9))  # the most tokens a request can report
    with pytest.raises(ValueError, match="finite"):
        PriceTable({"m": (math.nan, 1.0)})


# ---------------------------------------------------------------------- end to end
RUN = ["run", "--question", "sample_lava_lamps", "--level", "novice", "--max-turns", "1"]


@pytest.mark.parametrize("env", [
    {"KNOWSIM_LLM_TIMEOUT": "nan"}, {"KNOWSIM_LLM_TIMEOUT": "inf"}, {"KNOWSIM_LLM_TIMEOUT": "1e309"},
    {"KNOWSIM_LLM_RPM": "nan"},
    {"KNOWSIM_LLM_PRICES": '{"m1": [1e308, 1e308]}'}, {"KNOWSIM_LLM_PRICES": '{"m1": ["NaN", 1]}'},
], ids=["timeout-nan", "timeout-inf", "timeout-1e309", "rpm-nan", "prices-1e308", "prices-NaN-text"])
def test_the_run_command_refuses_the_setting_in_one_line_and_stores_nothing_unreadable(
        llm_server, db_path, monkeypatch, capsys, env):
    """Old code: timeout nan ended every call in a traceback and stored the raw exception; rpm nan
    ran with no limit; prices 1e308 stored cost inf (``runs --json`` printed Infinity) and "NaN"
    failed on the NOT NULL cost column, leaving the run interrupted."""
    from knowsim_core.cli import main

    for var, value in env.items():
        monkeypatch.setenv(var, value)
    code = main([*RUN, "--assistant", f"compat/m1@{llm_server.openai_url}", "--db", str(db_path)])
    err = capsys.readouterr().err
    (var,) = env
    assert code == 2 and err.startswith(f"error: {var}") and err.count("\n") == 1, err
    assert llm_server.requests == []
    for var in env:
        monkeypatch.delenv(var)
    assert main(["runs", "--json", "--db", str(db_path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []  # refused before a run was made
