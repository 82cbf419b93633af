"""One exception tree for KnowSim Studio.

    KnowSimError                 every error we raise on purpose; pages show it with st.error
    ├── GraphError               an IU graph that cannot be used (or an edit that would break it)
    │   └── GraphCycleError      an edit that would create a new directed cycle
    ├── ConfigError              a parameter or preset out of range, an unknown adapter id
    ├── SignalError              extractor output that cannot be used at all
    ├── SessionError             Simulation used out of order (e.g. step() before reset())
    ├── FormatError              a file that is not in the format it claims (import/export)
    ├── StorageError             the database cannot be opened, migrated or written
    └── ProviderError            an LLM provider call failed (bad key, timeout, rate limit…)

Every message says what was wrong, with the offending value, and what to do about it.
"""

from __future__ import annotations


class KnowSimError(Exception):
    """Base of every error KnowSim Studio raises deliberately.

    An error carries its message only: the model calls billed before it are in the run's usage
    ledger (:class:`knowsim_core.engine.ports.UsageLedger`), recorded when they were made.
    """


class GraphError(KnowSimError):
    """An IU graph that cannot be loaded or an edit that would make it invalid."""


class GraphCycleError(GraphError):
    """An edit that would create a directed prerequisite cycle.

    Attributes:
        cycle: the node ids of the cycle, in order, first id repeated at the end.
    """

    def __init__(self, message: str, cycle: tuple[str, ...]):
        super().__init__(message)
        self.cycle = cycle


class ConfigError(KnowSimError):
    """A configuration value, preset name or adapter id that is not valid."""


class SignalError(KnowSimError):
    """Extractor output that cannot be interpreted at all."""


class SessionError(KnowSimError):
    """A Simulation used out of order."""


class FormatError(KnowSimError):
    """An import file that is not in the expected format."""


class StorageError(KnowSimError):
    """The run database cannot be opened, migrated or written."""


class ProviderError(KnowSimError):
    """An LLM provider call failed; the message names the provider and the remedy."""
