"""A stored run as Studio JSON, the same bytes from the command line and the app.

The record with its adapter ids redacted (a run stored before redaction existed may hold a URL with
a key in it), its judgments, its tags and its batch tag: what an import into another database
needs to file the run as it was (:mod:`knowsim_core.services.importing`).
"""

from __future__ import annotations

from dataclasses import replace

from knowsim_core.formats import studio
from knowsim_core.storage import Store
from knowsim_core.text.redact import redact_urls


def studio_json(store: Store, run_id: str, *, indent: int | None = 2) -> str:
    """Run ``run_id`` as Studio JSON text.

    Raises:
        StorageError: an unknown run.
    """
    run = store.runs.load(run_id)
    run = replace(run, adapters=tuple((role, redact_urls(agent)) for role, agent in run.adapters))
    return studio.dumps(run, indent=indent, judgments=store.judgments.list(run_id),
                        tags=store.search.tags_of([run_id]).get(run_id, []),
                        batch_tag=store.search.get_row(run_id).batch_tag)
