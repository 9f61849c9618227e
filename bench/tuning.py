"""Edit the node configurations ``garlicfarm init`` wrote, for a benchmark's settings."""

from __future__ import annotations

from pathlib import Path


def set_options(path: str | Path, table: str, **values: object) -> None:
    """Set ``key = value`` lines in ``[table]`` (added at the end when the file has no such table)."""
    path = Path(path)
    lines = "".join(f"{key} = {_toml(value)}\n" for key, value in values.items())
    text = path.read_text()
    header = f"[{table}]\n"
    if header in text:
        text = text.replace(header, header + lines, 1)
    else:
        text += f"\n{header}{lines}"
    path.write_text(text)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
