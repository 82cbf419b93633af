"""IU graph editor (issue 6). Minimal placeholder while the editor is built."""

import streamlit as st

st.title("IU graph")
st.info("The graph editor is being built; this page will let you view, edit, validate and version IU graphs.")
