"""Failure-mode breakdowns (issue 6). Minimal placeholder while the page is built."""

import streamlit as st

st.title("Failure modes")
st.info("Per-turn and across-run failure-mode breakdowns will appear here.")
