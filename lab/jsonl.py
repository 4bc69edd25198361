"""Reading the lab's JSON-lines sets, with errors that name the file and line."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(path: Path, error: type[Exception]) -> Iterator[tuple[Any, str]]:
    """Each non-blank line of ``path`` parsed, with where it is ("path:line") for the caller's own messages;
    ``error`` naming the file or line when the file is missing or a line is not JSON."""
    if not path.is_file():
        raise error(f"{path}: no such file")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        yield data, f"{path}:{number}"
