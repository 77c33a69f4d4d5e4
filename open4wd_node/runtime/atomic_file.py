"""Writing a file so that a crash leaves either the old file or the whole new one, never a torn one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Temporary file in the same directory, fsync, then rename over ``path``.

    ``durable=False`` skips the fsync, for files whose loss costs only time (cache entries, which carry
    their own checksum): still never torn, but a power cut may take the new file back."""
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
