"""What the dashboard and the static report both show: tidy tables from the public API
(`frames`, `lanes`, `overview`, `spread`) and pure Altair charts (`charts`, `stragglers`,
`critical_path`), with their words (`desync`). Nothing here imports Streamlit."""
