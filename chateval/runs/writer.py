"""Group commit for an append-only JSONL file: lines are queued by the event loop and written and
fsynced in batches by one writer thread, so a slow fsync (milliseconds, sometimes tens) never
blocks the loop.

Crash guarantee (as with one fsync per line): a line handed to :meth:`GroupWriter.put` is on disk
once a later :meth:`flush` returns, and the thread starts writing as soon as a line is queued (no
timer), so ``kill -9`` loses at most the lines in flight: those queued while the previous batch
was being fsynced. A batch that cannot be written is cut back to the last whole line; the error
is kept (:attr:`error`) and every later ``put`` is refused, so the run stops as it did before.
"""

from __future__ import annotations

import os
import threading

MAX_QUEUED = 1024  # lines waiting at most: a disk slower than the run holds the producer back


class GroupWriter:
    def __init__(self, fd: int, name: str = "run-writer") -> None:
        self.fd = fd
        self.error: OSError | None = None
        self._queue: list[bytes] = []
        self._busy = False  # a batch taken from the queue is being written
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, line: bytes) -> None:
        """Queue one whole line. Raises the write error of an earlier batch instead."""
        with self._cond:
            while len(self._queue) >= MAX_QUEUED and self.error is None:
                self._cond.wait()
            if self.error is not None:
                raise self.error
            self._queue.append(line)
            self._cond.notify_all()

    def flush(self) -> None:
        """Wait until every queued line is written and fsynced (or its batch failed: see :attr:`error`)."""
        with self._cond:
            while (self._queue or self._busy) and self.error is None:
                self._cond.wait()

    def close(self) -> None:
        """Drain the queue and stop the thread (the file descriptor stays the caller's)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return  # closed and drained
                batch, self._queue = self._queue, []
                self._busy = True
                self._cond.notify_all()  # room in the queue again
            error = self._write(b"".join(batch))
            with self._cond:
                self._busy = False
                if error is not None:
                    self.error = error
                    self._queue.clear()  # never written: counted as missing from the file itself
                self._cond.notify_all()
                if error is not None:
                    return

    def _write(self, data: bytes) -> OSError | None:
        fd = self.fd
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
        except OSError as e:
            return e
        written = 0
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                written += n
                view = view[n:]
            os.fsync(fd)
        except OSError as e:
            # A write that failed part way (a full disk, ``ulimit -f``) keeps the batch's whole lines
            # that reached the file, as one write per line did before group commit; a failed fsync
            # drops the batch (none of it is known to be on disk). Never a half line for readers
            # or a resume.
            keep = data.rfind(b"\n", 0, written) + 1 if written < len(data) else 0
            try:
                os.ftruncate(fd, start + keep)
                if keep:
                    os.fsync(fd)
            except OSError:
                pass  # a resume drops the torn line and says so
            return e
        return None
