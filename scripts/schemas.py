"""Write docs/schema/<command>.schema.json from the documents' structs (traceview/documents).
Run after changing a document; tests/documents/test_schemas.py fails until the files agree."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from traceview.documents.publish import DOCUMENTS, json_schema

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "schema"


def text(command: str) -> str:
    return json.dumps(json_schema(command), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for command in DOCUMENTS:
        path = FOLDER / f"{command}.schema.json"
        path.write_text(text(command))
        print(f"wrote {path.relative_to(FOLDER.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
