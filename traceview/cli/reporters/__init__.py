"""One renderer per output format — as_table, as_json, as_csv — each rendering what every
command computed; `common` holds what they share (units, the rows of a rank, the calls)."""
