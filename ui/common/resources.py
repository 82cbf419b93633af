"""Shared resources: the store, the vendored vis-network, provider status (cached per process).

A :class:`~knowsim_core.storage.Store` opens a fresh SQLite connection per call, so one object
per database path can be shared by every session and thread; it is cached by path so tests that
point ``KNOWSIM_DB`` at a new file get a new store.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import streamlit as st

from knowsim_core import llm
from knowsim_core.agents import registry
from knowsim_core.engine.agent_id import parse_id
from knowsim_core.errors import StorageError
from knowsim_core.storage import Store
from ui.common import keys

ROOT = Path(__file__).resolve().parents[2]
STATIC_VENDOR = ROOT / "static" / "vendor"
VIS_FILE = "vis-network.min.js"
GRAPH_MODULE_SOURCE = ROOT / "ui" / "assets" / "graph_view.js"
PLOT_MODULE_SOURCE = ROOT / "ui" / "assets" / "plot_view.js"
PLOTLY_FILE = "plotly.min.js"  # in the plotly package's package_data
LOGO = ROOT / "assets" / "logo.png"
DEFAULT_DB = Path.home() / ".knowsim" / "studio.db"


def db_path() -> Path:
    """The database this process uses: ``$KNOWSIM_DB`` or ``~/.knowsim/studio.db``."""
    return Path(os.environ.get("KNOWSIM_DB") or DEFAULT_DB).expanduser()


@st.cache_resource(show_spinner=False)
def _store(path: str):
    store = Store(path)
    if not store.read_only:  # a read-only database is shown as it is (seeding writes)
        store.questions.seed_samples()  # the first screen is never empty
    return store


def get_store():
    """The shared store for the current database path (seeded with the sample questions). When its
    file was deleted or moved since the app opened it, the page says so in one line and stops."""
    store = _store(str(db_path()))
    try:
        store.check_present()
    except StorageError as exc:
        st.error(str(exc))
        st.stop()
    return store


def _copy(source: Path, target: Path) -> None:
    if not target.exists():
        STATIC_VENDOR.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        tmp.replace(target)  # atomic: two app processes may start at once


def ensure_vendor() -> Path:
    """Put the browser code in ./static/vendor/ (served at /app/static/vendor/).

    vis-network is copied from the installed pyvis package (Apache-2.0/MIT; not committed) and
    plotly.js from the installed plotly package (MIT; for the charts the player updates in place);
    the components' modules are copied under content-hashed names, so browsers cache them for good
    and a new version is never served stale. Idempotent.
    """
    _copy(_package_dir("pyvis") / "lib" / "vis-9.1.2" / VIS_FILE, STATIC_VENDOR / VIS_FILE)
    _copy(_package_dir("plotly") / "package_data" / PLOTLY_FILE, STATIC_VENDOR / plotly_name())
    _copy(GRAPH_MODULE_SOURCE, STATIC_VENDOR / graph_module_name())
    _copy(PLOT_MODULE_SOURCE, STATIC_VENDOR / plot_module_name())
    return STATIC_VENDOR / VIS_FILE


@lru_cache(maxsize=4)
def _package_dir(name: str) -> Path:
    """An installed package's folder, found without importing it: importing pyvis (IPython, jinja)
    was ~0.5 s of the first page a fresh server drew, only to learn where its files are."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{name} is not installed; `pip install -r requirements.txt`")
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=1)
def graph_module_name() -> str:
    digest = hashlib.sha1(GRAPH_MODULE_SOURCE.read_bytes()).hexdigest()[:10]
    return f"graph_view.{digest}.js"


@lru_cache(maxsize=1)
def plot_module_name() -> str:
    digest = hashlib.sha1(PLOT_MODULE_SOURCE.read_bytes()).hexdigest()[:10]
    return f"plot_view.{digest}.js"


@lru_cache(maxsize=1)
def plotly_name() -> str:
    """plotly.min.js under the installed plotly version, so an upgrade is never served stale (the
    version read from the package's metadata: no import of plotly on a page that draws no chart)."""
    return f"plotly-{version('plotly')}.min.js"


def module_loader(renders: str, box: str, what: str) -> str:
    """The source of a v2 component that only runs a module served from the app's static route.

    Streamlit re-sends a component's source on every rerun, so the source stays this small loader.
    The module registers its render function under ``window[renders][module URL]``; once it is
    loaded, the loader calls it directly (an ``import()`` resolves a task later, behind the rest
    of the rerun's rendering). A module that cannot load says so in the element ``box``.
    """
    return f"""export default function (component) {{
  // the loader runs from a blob: URL, so the module path is resolved against the page's origin
  const url = new URL(component.data.module, window.location.origin).href;
  const render = (window.{renders} || {{}})[url];
  if (render) return render(component);
  import(url).then((m) => m.default(component)).catch((e) => {{
    const el = component.parentElement.querySelector("{box}");
    if (el) el.textContent = "The {what} could not be drawn: " + e.message;
  }});
}}"""


def _static_url(name: str) -> str:
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    prefix = f"/{base}" if base else ""
    return f"{prefix}/app/static/vendor/{name}"


def vis_url() -> str:
    """Where the browser loads vis-network from: this app's own static route."""
    return _static_url(VIS_FILE)


def plot_module_url() -> str:
    """The live chart component's ES module (content-hashed) on the app's static route."""
    ensure_vendor()
    return _static_url(plot_module_name())


def plotly_url() -> str:
    """Where the browser loads plotly.js from for the live charts: this app's own static route."""
    return _static_url(plotly_name())


def graph_module_url() -> str:
    """The graph component's ES module (content-hashed) on the app's static route."""
    ensure_vendor()
    return _static_url(graph_module_name())


# ---------------------------------------------------------------------- providers
def _secrets() -> dict[str, Any]:
    """st.secrets as a dict; {} when there is no secrets file (reading it would raise)."""
    try:
        return dict(st.secrets)
    except Exception:  # noqa: BLE001 — no secrets file is the normal offline case
        return {}


def llm_settings():
    """The LLM settings from env + secrets + session overrides, or None when a setting is invalid."""
    try:
        settings = llm.LLMSettings.from_sources(env=dict(os.environ), secrets=_secrets())
        typed = {f: st.session_state.get(keys.llm_field(f), "") for f, _, _ in _SESSION_FIELDS}
        return settings.with_overrides(**{k: v for k, v in typed.items() if v})
    except Exception as exc:  # noqa: BLE001 — a bad setting must not take the app down
        st.session_state[keys.LLM_SETTINGS_ERROR] = str(exc)
        return None


def provider_lines() -> list[tuple[str, bool, str]]:
    """(provider, available, note) rows for the sidebar; offline is always available."""
    offline = [("offline", True, "built-in deterministic agents; no model calls")]
    settings = llm_settings()
    if settings is None:
        return offline
    try:
        rows = [(s.name, bool(s.available), s.detail) for s in llm.provider_status(settings)]
    except Exception:  # noqa: BLE001 — the sidebar must render even if the LLM module misbehaves
        return offline
    return rows if any(r[0] == "offline" for r in rows) else offline + rows


_SESSION_FIELDS = (
    ("openai_api_key", "OpenAI API key", True),
    ("anthropic_api_key", "Anthropic API key", True),
    ("compat_base_url", "OpenAI-compatible base URL", False),
)


def llm_session_settings() -> None:
    """Sidebar boxes for keys / a base URL used by this browser session only (kept in memory)."""
    with st.expander("Model keys (this session only)"):
        st.caption("Kept in memory for this session; never stored in the database or in exports.")
        for field, label, secret in _SESSION_FIELDS:
            st.text_input(label, key=keys.llm_field(field), type="password" if secret else "default")


def agent_settings(store) -> dict[str, Any] | None:
    """Keyword settings for building LLM agents (runner ``settings=``); None when the LLM settings are invalid."""
    settings = llm_settings()
    if settings is None:
        return None
    return {"settings": settings, "cache": store.caches if settings.cache_enabled else None}


def agent_ids(kind: str) -> list[str]:
    """Offline ids of ``kind`` first, then the LLM ids configured providers offer."""
    ids = [e.id for e in registry.available(kind)]
    settings = llm_settings()
    if settings is not None:
        ids += [i for i in llm.llm_agent_ids(settings).get(kind, []) if i not in ids]
    return ids


def agent_label_func():
    """How the agent selectors show an id: the running local model's ids say what it is
    ("small local model …"); every other id as it is."""
    settings = llm_settings()
    local = getattr(settings, "local", None)
    if local is None:
        return str

    def label(agent_id: str) -> str:
        part = parse_id(agent_id)  # either spelling of a strategy (before or after the URL)
        ours = part.provider == "compat" and part.model == local.model and part.url == local.url
        return f"{agent_id} — {local.label}" if ours else agent_id

    return label
