"""The Streamlit dashboard (app.py) and the static report (static.py). What the CLI that starts
the server and the pages both need is declared here, without importing Streamlit."""

ROOT_ENV = "TRACEVIEW_DASHBOARD_ROOT"  # the folder the dashboard reads, set by the CLI
MAX_UPLOAD_MB = 200  # the server's upload limit and the Runs page's
