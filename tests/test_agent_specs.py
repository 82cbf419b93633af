"""Every agent id form has one description (:func:`registry.spec_of`), and the callers that used to
parse prefixes agree with it."""

from __future__ import annotations

import pytest

from knowsim_core.agents import registry
from knowsim_core.agents.registry import HUMAN_ID, spec_of
from knowsim_core.batch.plan import BatchSpec, model_name, plan
from knowsim_core.errors import ConfigError
from knowsim_core.evaluation.realism import build_users
from knowsim_core.llm.settings import PROVIDERS


@pytest.mark.parametrize(("agent_id", "flags", "model"), [
    ("offline/adaptive", {"offline"}, None),
    ("offline/lexical", {"offline"}, None),
    ("baseline/copy-last", {"offline", "baseline"}, None),
    ("human", {"human"}, None),
    ("recorded/gpt-4o", {"recorded"}, None),
    ("openai/gpt-4o:socratic", {"needs_model"}, "gpt-4o"),
    ("anthropic/claude-haiku-4-5", {"needs_model"}, "claude-haiku-4-5"),
    ("compat/llama3:8b@http://h/v1", {"needs_model"}, "llama3:8b"),
    ("compat/llama3:8b", {"needs_model"}, "llama3:8b"),
    # the baseline users' methods (llm_baselines) are no part of the model either
    ("openai/gpt-4o-mini:zs", {"needs_model"}, "gpt-4o-mini"),
    ("openai/gpt-4o-mini:zs-cot", {"needs_model"}, "gpt-4o-mini"),
    ("compat/llama3:8b@http://h/v1:zs-cot-prof", {"needs_model"}, "llama3:8b"),
    ("compat/llama3:zs-cot", {"needs_model"}, "llama3"),
    ("elsewhere/thing", set(), None),
    ("humans", set(), None),
])
def test_every_id_form_has_one_spec(agent_id, flags, model):
    spec = spec_of(agent_id)
    on = {f for f in ("needs_model", "offline", "human", "recorded", "baseline") if getattr(spec, f)}
    assert on == flags and spec.model == model and spec.id == agent_id


def test_roles_come_from_the_registrations():
    assert spec_of("offline/lexical").roles == ("extractor",)
    assert spec_of("baseline/generic").roles == ("user",)
    assert set(spec_of(HUMAN_ID).roles) == {"assistant", "user"}
    assert spec_of("offline/no-such-agent").roles == ()  # not registered: building it names the choices
    for kind in ("assistant", "user", "extractor"):
        for entry in registry.available(kind):
            assert kind in entry.spec.roles and not entry.spec.needs_model
            assert entry.spec.offline != entry.spec.human  # registered ids are played by code or typed


def test_the_registry_knows_the_llm_layers_providers_without_loading_it():
    assert set(registry.MODEL_PROVIDERS) == set(PROVIDERS)


def test_batch_cost_and_realism_ask_the_spec():
    spec = BatchSpec(("q",), ("novice",), ("offline/simple", "openai/gpt-4o"), 1, "baseline/copy-last",
                     "offline/lexical", "paper-final")
    assert spec.llm_agents() == ["openai/gpt-4o"]
    assert model_name("openai/gpt-4o:simple") == "gpt-4o"
    # an offline or baseline user never receives LLM settings (its constructor takes none)
    users = build_users(["baseline/copy-last", "offline/knowsim"], {"settings": object(), "cache": None})
    assert set(users) == {"baseline/copy-last", "offline/knowsim"}


def test_a_baseline_user_batch_is_priced_by_its_model():
    """``openai/gpt-4o-mini:zs-cot`` was priced as the unknown model 'gpt-4o-mini:zs-cot' ($0)."""
    from knowsim_core.batch.plan import estimate
    from knowsim_core.llm.prices import PriceTable

    spec = BatchSpec(("q",), ("novice",), ("offline/simple",), 1, "openai/gpt-4o-mini:zs-cot", "offline/lexical",
                     "paper-final", 3)
    assert model_name("openai/gpt-4o-mini:zs-cot") == "gpt-4o-mini"
    est = estimate(spec, 1, prices=PriceTable({"gpt-4o-mini": (1.0, 2.0)}))
    assert est.unpriced == () and est.per_conversation_usd > 0


def test_a_batch_refuses_typed_and_recorded_sides(seeded_store):
    for user in ("human", "recorded/structured"):
        with pytest.raises(ConfigError, match="cannot play a batch"):
            plan(seeded_store, questions="sample_lava_lamps", levels="novice", assistants="offline/simple", user=user)
