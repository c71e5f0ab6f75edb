"""The C allocator's setting for processes that read a big cluster page by page (the TUI with -A).

glibc's malloc serves a request above its mmap threshold (128 KiB) with a mapping of its own, returned to
the system on free; but the first such block freed raises the threshold to its size (up to 32 MiB). A read
of the whole cluster decodes pages of about 1 MiB of JSON in several list threads at once: after the first
page, every page's buffers came from the threads' heaps instead and, freed between long-lived objects,
stayed there. At 10,000 workloads that was ~20 MiB of the TUI's peak RSS (measured: 194 -> 174 MiB with
the threshold fixed at its default). `fix_mmap_threshold` fixes it at the default, which also turns the
raising off (mallopt(3)). Anywhere else (another libc, another system) it does nothing.
"""

from __future__ import annotations

import sys

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
THRESHOLD = 128 * 1024  # glibc's default


def fix_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at its default for this process; True when it was set."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: command start-up never pays for it

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no such symbol: not glibc (or a static build)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD))
