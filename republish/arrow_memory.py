"""Give the memory Arrow freed back to the operating system.

pyarrow allocates through its own pool (mimalloc by default), which keeps the pages of
freed buffers for later use. After a Parquet file or blob becomes a pandas frame, the
Arrow buffers are freed but their pages stay in the process: measured on a 2M-row store,
0.2 GiB of resident memory after reading the private state (1 GiB at 10M rows), counted
in the peak of every later phase of a release. :func:`release_arrow_memory` returns them
(mimalloc's forced collection; a few milliseconds), so the next phase's numpy and pandas
temporaries reuse that memory instead of adding to it.
"""

from __future__ import annotations

__all__ = ["LARGE_TABLE", "release_arrow_memory", "release_free_memory"]


def release_arrow_memory() -> None:
    """Return the unused pages of Arrow's default memory pool to the OS (no-op without
    pyarrow, or for pools that keep nothing)."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return
    pa.default_memory_pool().release_unused()


#: Tables smaller than this skip :func:`release_free_memory` (nothing worth returning).
LARGE_TABLE = 200_000


def release_free_memory(rows: int = LARGE_TABLE) -> None:
    """Before a memory-hungry phase of a release of ``rows`` rows: give back what Arrow's
    pool and the C heap hold free (``malloc_trim(0)``, glibc only).

    glibc keeps freed blocks below its mmap threshold (up to 32 MiB) in its heaps; after
    reading and validating a 2M-row table 80 MB of them stay resident (0.4 GB at 10M), and
    the next phase's peak counts them. A few milliseconds; skipped below
    :data:`LARGE_TABLE` rows."""
    if rows < LARGE_TABLE:
        return
    release_arrow_memory()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the allocator keeps its pages
        pass
