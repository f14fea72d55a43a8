"""traceview dashboard: `traceview dashboard [PATH]`, or `streamlit run app.py -- PATH`."""

from pathlib import Path

import streamlit as st

from traceview.dashboard import data
from traceview.plain import GLOSSARY

st.set_page_config(page_title="traceview", layout="wide")
PAGES = Path(__file__).parent / "views"
navigation = st.navigation(
    [
        st.Page(PAGES / "scaling.py", title="Scaling", default=True),
        st.Page(PAGES / "timeline.py", title="Timeline"),
        st.Page(PAGES / "overlap.py", title="Overlap"),
        st.Page(PAGES / "buckets.py", title="Buckets"),
        st.Page(PAGES / "memory.py", title="Memory"),
        st.Page(PAGES / "diff.py", title="Diff"),
        st.Page(PAGES / "runs.py", title="Runs"),
    ]
)
st.sidebar.caption(f"reading {data.root()} · the words used: {GLOSSARY}")
navigation.run()
