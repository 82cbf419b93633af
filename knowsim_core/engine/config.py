"""Every constant of the simulator, named once (spec §2, §4, §5).

Two named presets:

* ``paper-final`` — the reference code as the paper's runs configured it (spec §4.1). It
  reproduces the recorded runs bit for bit and is the default everywhere.
* ``paper-text`` — the paper's prose where it differs (spec §8, §12): pre-turn ceiling, no
  sigmoid softening (k = 1), no per-IU hinge, carry reset on a transition, 80 % mastery and the
  5-turn persistent-overload rule, Table 5 ratios and the deterministic initial state.

Never mix them silently: a run records the preset name and the full parameter set.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from knowsim_core.errors import ConfigError

DEFAULT_PRESET = "paper-final"
DEFAULT_MAX_TURNS = 15  # spec §4.1
DEFAULT_INIT_SEED = 42  # spec §2.2: seed of every paper config

LEVELS: tuple[str, ...] = ("novice", "intermediate", "advanced")
# the agents a run gets unless told otherwise (services.runner re-exports them; here so that
# `run --help` can print them without importing the runner and storage)
DEFAULT_USER = "offline/knowsim"
DEFAULT_EXTRACTOR = "offline/lexical"


class LevelRatios(BaseModel):
    """Shares of known / partial / struggling IUs for one level (unaware is the rest)."""

    model_config = ConfigDict(frozen=True)

    known: float = Field(ge=0, le=1)
    partial: float = Field(ge=0, le=1)
    struggling: float = Field(ge=0, le=1)

    # The shares may add up to more than 1 (the reference's advanced level does: .80 + .20 +
    # .10); the sampler caps each target by what is left, spec §2.2.


# Spec §2.2 (reference code, paper-final): partial .10/.25/.20.
REFERENCE_RATIOS: dict[str, LevelRatios] = {
    "novice": LevelRatios(known=0.10, partial=0.10, struggling=0.30),
    "intermediate": LevelRatios(known=0.55, partial=0.25, struggling=0.20),
    "advanced": LevelRatios(known=0.80, partial=0.20, struggling=0.10),
}
# Spec §2.1 (paper Table 5).
PAPER_RATIOS: dict[str, LevelRatios] = {
    "novice": LevelRatios(known=0.10, partial=0.10, struggling=0.30),
    "intermediate": LevelRatios(known=0.55, partial=0.15, struggling=0.20),
    "advanced": LevelRatios(known=0.80, partial=0.10, struggling=0.10),
}


class RuleParams(BaseModel):
    """Parameters of the per-turn update, termination and initial state.

    Every field cites the spec section it reproduces; defaults are paper-final.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: str = DEFAULT_PRESET
    # §4.2 capacity τ = max(capacity_min, round(capacity_ratio · |V|))
    capacity_ratio: float = Field(default=0.55, gt=0)
    capacity_min: int = Field(default=2, ge=1)
    # §4.3 load weights by pre-turn state (U, S, P, K)
    mention_weights: tuple[float, float, float, float] = (1.75, 1.00, 0.70, 0.35)
    reasoning_weights: tuple[float, float, float, float] = (1.75, 1.40, 0.70, 0.35)
    articulation_weight: float = Field(default=0.35, ge=0)
    # §4.4 η = 1 / (1 + ((L − τ)/(k·τ))^2)
    sigmoid_softening: float = Field(default=1.3, gt=0)
    sigmoid_power: float = Field(default=2.0, gt=0)
    # §4.5 per-IU hinge
    hinge: bool = True
    hinge_ratio: float = Field(default=0.143, ge=0)
    hinge_tail: float = Field(default=0.5, ge=0, le=1)
    # §4.7 ceiling read from live (cascading) states or pre-turn states
    ceiling_source: Literal["live", "pre_turn"] = "live"
    # §4.9 carry kept after a step (reference) or reset (paper prose)
    reset_carry_on_transition: bool = False
    # §5 termination
    termination: Literal["reference", "paper"] = "reference"
    mastery_fraction: float = Field(default=1.0, gt=0, le=1)
    overload_window: int = Field(default=3, ge=1)
    overload_min_turn: int = Field(default=3, ge=1)
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1, le=200)
    # §2 initial state
    init_method: Literal["sampled", "deterministic"] = "sampled"
    init_ratios: dict[str, LevelRatios] = Field(default_factory=lambda: dict(REFERENCE_RATIOS))

    @model_validator(mode="after")
    def _check(self) -> "RuleParams":
        for name in ("mention_weights", "reasoning_weights"):
            if any(w < 0 for w in getattr(self, name)):
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)}")
        missing = [lvl for lvl in LEVELS if lvl not in self.init_ratios]
        if missing:
            raise ValueError(f"init_ratios needs the levels {LEVELS}, missing {missing}")
        return self

    def capacity(self, n_nodes: int) -> int:
        """τ for a graph of ``n_nodes`` IUs (spec §4.2: Python rounding of the float product)."""
        return max(self.capacity_min, round(self.capacity_ratio * n_nodes))

    def n_keep(self, n_nodes: int) -> int:
        """How many of the neediest mentioned IUs keep the full η (spec §4.5)."""
        return max(1, round(self.hinge_ratio * n_nodes))


PRESETS: dict[str, RuleParams] = {
    "paper-final": RuleParams(),
    "paper-text": RuleParams(
        preset="paper-text",
        sigmoid_softening=1.0,
        hinge=False,
        ceiling_source="pre_turn",
        reset_carry_on_transition=True,
        termination="paper",
        mastery_fraction=0.8,
        overload_window=5,
        overload_min_turn=5,
        init_method="deterministic",
        init_ratios=dict(PAPER_RATIOS),
    ),
}


def preset(name: str = DEFAULT_PRESET, **overrides: object) -> RuleParams:
    """The named preset, optionally with some fields overridden.

    Raises:
        ConfigError: unknown preset name or an override out of range.
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown rule preset {name!r}; expected one of {sorted(PRESETS)}")
    if not overrides:
        return PRESETS[name]
    try:
        return RuleParams.model_validate({**PRESETS[name].model_dump(), **overrides})
    except ValueError as exc:
        raise ConfigError(f"invalid override for preset {name!r}: {exc}") from exc
