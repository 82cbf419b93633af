"""The agents: offline tutors, learners and readers, LLM agents, baselines, the human and recorded
sides, and :mod:`.registry` — every agent id with its spec, and the one way to build an agent.

Loaded on first use (:mod:`knowsim_core.lazy`): ``agents.registry`` (or any module) is imported when
first read; the registry imports an agent's module only when that agent is built (an LLM agent's
module brings the LLM layer), so a command's ``--help`` loads none of them.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
