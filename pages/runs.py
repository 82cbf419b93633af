"""Saved runs (issue 6). Minimal placeholder while the page is built."""

import streamlit as st

st.title("Saved runs")
st.info("Browse, compare, export and import saved runs here.")
