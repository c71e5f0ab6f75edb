"""How a journal is laid out in ConfigMaps: pure encoding and decoding, no I/O.

A ConfigMap holds at most 1 MiB (``data`` and ``binaryData`` together) while a group's workloads may be
far bigger (a pod template with 48 KB of env, times a dozen workloads). So the journal's JSON is laid
out by size, and every layout is read back by every version from this one on:

* ``data["journal.json"]``: plain JSON, as every earlier version wrote it, while it stays under
  `PLAIN_LIMIT` (small journals stay readable with ``kubectl get cm -o yaml`` and by older versions);
* ``binaryData["journal.json.gz"]``: the same JSON gzipped, when it is bigger;
* parts: when even the gzip exceeds `PART_LIMIT`, it is cut into pieces held by part ConfigMaps
  (``<journal>-part-<slot>-<i>``); the journal ConfigMap itself names them and the digest of the whole
  in `PARTS_ANNOTATION`. Two slots, ``a`` and ``b``, alternate: a save writes its parts into the slot
  the stored journal does not name, then the journal ConfigMap, whose resourceVersion-guarded write is
  the commit. A reader sees the old parts or the new, never a mix (a digest mismatch reads as no
  journal rather than as a wrong one), and no part is ever deleted, so the Task needs no delete right
  and parts never pile up (at most two sets).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

DATA_KEY = "journal.json"
PACKED_KEY = "journal.json.gz"
PART_KEY = "journal.part"  # a part ConfigMap's piece of the gzip
PARTS_ANNOTATION = "rollguard.io/journal-parts"
PART_OF_LABEL = "rollguard.io/journal-part-of"
PLAIN_LIMIT = 256 * 1024
PART_LIMIT = 900 * 1024  # under the 1 MiB a ConfigMap may hold, with room for its metadata


@dataclass(frozen=True)
class Layout:
    """What to write: the journal ConfigMap's ``data``/``binaryData``/annotation, and its parts."""

    data: dict[str, str] = field(default_factory=dict)
    binary: dict[str, str] = field(default_factory=dict)  # base64, as the API carries binaryData
    parts_annotation: str = ""
    parts: dict[str, str] = field(default_factory=dict)  # part ConfigMap name -> base64 chunk

    @property
    def size(self) -> int:
        """Bytes the journal ConfigMap's payload counts against its 1 MiB (binaryData decoded)."""
        return sum(len(v.encode()) for v in self.data.values()) + sum(
            len(v) * 3 // 4 for v in self.binary.values()
        )


def encode(payload: Obj, *, name: str, slot: str = "a") -> Layout:
    """Lay the journal's JSON out for ConfigMap ``name``, parts (if any) in ``slot`` (module docstring)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    if len(text.encode()) <= PLAIN_LIMIT:
        return Layout(data={DATA_KEY: text})
    import gzip  # here: most journals are plain JSON, and a `status` start-up need not import it

    packed = gzip.compress(text.encode(), compresslevel=6, mtime=0)
    if len(packed) <= PART_LIMIT:
        return Layout(binary={PACKED_KEY: _b64(packed)})
    digest = hashlib.sha256(packed).hexdigest()
    chunks = [packed[i : i + PART_LIMIT] for i in range(0, len(packed), PART_LIMIT)]
    names = [f"{name}-part-{slot}-{i}" for i in range(len(chunks))]
    return Layout(
        parts_annotation=json.dumps({"sha256": digest, "parts": names}, separators=(",", ":")),
        parts={n: _b64(c) for n, c in zip(names, chunks, strict=True)},
    )


def is_part(cm: Obj) -> bool:
    """True for a part ConfigMap (labelled as a journal too, so list readers get the parts with it)."""
    return PART_OF_LABEL in ((cm.get("metadata") or {}).get("labels") or {})


def part_names(cm: Obj) -> list[str]:
    """The part ConfigMaps a journal ConfigMap's payload is in ([] when it holds the payload itself)."""
    index = _parts_index(cm)
    return list(index.get("parts", [])) if index else []


def decode(cm: Obj, *, part: Callable[[str], Obj | None] | None = None) -> Any:
    """The journal's JSON value in a ConfigMap (any layout), or None when absent, incomplete or garbage.

    ``part`` looks a part ConfigMap up by name (a GET, or a list already read).
    """
    data, binary = cm.get("data") or {}, cm.get("binaryData") or {}
    try:
        if DATA_KEY in data:
            return json.loads(data[DATA_KEY])
        if PACKED_KEY in binary:
            import gzip

            return json.loads(gzip.decompress(base64.b64decode(binary[PACKED_KEY])))
        index = _parts_index(cm)
        if not index or part is None:
            return None
        chunks = []
        for name in index.get("parts", []):
            obj = part(name)
            if obj is None:
                return None
            chunks.append(base64.b64decode((obj.get("binaryData") or {}).get(PART_KEY, "")))
        packed = b"".join(chunks)
        if hashlib.sha256(packed).hexdigest() != index.get("sha256"):
            return None
        import gzip

        return json.loads(gzip.decompress(packed))
    except (ValueError, OSError, EOFError):  # bad JSON, base64 or gzip: no journal, never a wrong one
        return None


def _parts_index(cm: Obj) -> Obj | None:
    text = ((cm.get("metadata") or {}).get("annotations") or {}).get(PARTS_ANNOTATION)
    if not text:
        return None
    try:
        index = json.loads(text)
    except ValueError:
        return None
    return index if isinstance(index, dict) else None


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
