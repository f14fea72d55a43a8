"""The Streamlit dashboard: `app.py` routes to one page per file in `views/`. What the CLI that
starts the server and the pages both need is declared here, without importing Streamlit. What it
shows beside the static report is in traceview/presentation."""

ROOT_ENV = "TRACEVIEW_DASHBOARD_ROOT"  # the folder the dashboard reads, set by the CLI
MAX_UPLOAD_MB = 200  # the server's upload limit and the Runs page's
