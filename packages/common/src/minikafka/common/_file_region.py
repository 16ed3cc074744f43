"""FileRegion: bytes of a file that a response sends with ``os.sendfile`` (zero copy).

The log produces them (a fetch reads a segment's slice) and the network layer sends
them, so the type lives below both: the log never imports the network layer to say
"these bytes of this file".
"""

from __future__ import annotations

import os
from typing import Protocol

import attrs


class PinnableFile(Protocol):
    """A file whose owner may close its descriptor when idle (the log's descriptor pool).

    ``pin`` returns a descriptor that stays open, and keeps naming this file, until the
    matching ``unpin``; it raises OSError if the file is gone.
    """

    def pin(self) -> int: ...

    def unpin(self) -> None: ...


@attrs.frozen
class FileRegion:
    """``length`` bytes of a file from ``position``, sent with ``os.sendfile``.

    ``file`` is an open file descriptor (the owner keeps it open until the send is
    done), a path the Processor opens for the send, or a :class:`PinnableFile` the
    Processor pins for the send (a log segment: its descriptor may have been closed and
    its number reused while the response waited, so the number is only asked for when
    the bytes are sent). This is how the log's zero-copy fetch leaves the page cache for
    the socket without passing through Python.
    """

    file: int | str | os.PathLike[str] | PinnableFile
    position: int
    length: int
