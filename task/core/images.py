"""How an image reference is shown in a table cell: the one `short_image` of the CLI and the TUI (pure).

`rollguard status` and the TUI's rows, detail and confirm dialog print images in narrow columns, so both
cut a reference to what tells images apart at a glance: the last path element with its tag, and a digest
cut to 12 hex digits as ``docker images`` shortens IDs. The full reference is in ``status -o json``, the
report and the TUI's YAML page. One function, so that the two faces never show one image two ways.
"""

from __future__ import annotations

SHORT_DIGEST = 12  # hex digits of a digest kept, as container tools shorten image IDs


def short_image(image: str) -> str:
    """``registry/ns/api:v1`` -> ``api:v1``; ``registry/ns/api@sha256:0123456789ab...`` -> ``api@0123456789ab``
    (another digest algorithm keeps its name: ``api@sha512:0123456789ab``); blank -> ``(none)``."""
    if not image.strip():
        return "(none)"
    name, _, digest = image.partition("@")
    name = name.rsplit("/", 1)[-1]
    if not digest:
        return name
    algorithm, _, hexdigits = digest.partition(":")
    if not hexdigits:
        return f"{name}@{algorithm[:SHORT_DIGEST]}"
    prefix = "" if algorithm == "sha256" else f"{algorithm}:"
    return f"{name}@{prefix}{hexdigits[:SHORT_DIGEST]}"
