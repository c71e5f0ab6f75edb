"""A small syrupy extension storing Textual screenshots as SVG files (pytest-textual-snapshot pins an
old syrupy that needs pytest < 9, reference section 6)."""

from __future__ import annotations

import re
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

# Rich names the SVG's CSS classes after a hash of the content; one name keeps diffs readable.
_UNIQUE_ID = re.compile(r"terminal-\d+")


class SVGScreenshot(SingleFileSnapshotExtension):
    """`assert app.export_screenshot() == snapshot(extension_class=SVGScreenshot)`."""

    file_extension = "svg"
    _write_mode = WriteMode.TEXT

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return _UNIQUE_ID.sub("terminal", str(data))
