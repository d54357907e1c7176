"""Where the web process of `evcli serve` does its blocking work, so that its event loop only reads requests
and writes answers (and /healthz, which needs neither, answers at once whatever else is going on).

Store work runs on threads, each with its own connection to the store, so no two requests share a
transaction: writes (accepting a delivery) on one thread, as SQLite runs one writer at a time anyway; reads
on READ_THREADS others, so a read never waits behind a write that waits for another process's lock.
A session page (loading a document that may be tens of MB and rendering it as HTML or canonical JSON) runs
in a render process (RENDER_PROCESSES of them): one `json.dumps` of a 40 MB document holds the GIL for half
a second, which a thread would take from the event loop too. The page comes back as a file in a private
temporary directory, streamed in SEND_CHUNK reads off the loop and removed once sent (the directory goes at
shutdown): passing 40 MB back through the pool's pipe would copy it several times under the web process's
GIL. A render process that dies (out of memory) is replaced with a new pool; the request that met it is
answered 503.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from evcli.core.errors import EvcliError
from evcli.serve import ignore_interrupts

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from evcli.store.db import TraceStore

READ_THREADS = 3
RENDER_PROCESSES = 2
SEND_CHUNK = 256 * 1024
T = TypeVar("T")
_render_stores: dict[str, TraceStore] = {}  # in a render process: its one connection per store file


class RendererDied(EvcliError):
    """A render process ended mid-page (out of memory?); the next request gets a new one."""


class Offload:
    def __init__(self, db: str) -> None:
        self.db = db
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="evcli-store-write")
        self._readers = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="evcli-store-read")
        self._local = threading.local()
        self._opened: list[TraceStore] = []
        self._lock = threading.Lock()
        self._renderers: ProcessPoolExecutor | None = None
        self._pages = Path(tempfile.mkdtemp(prefix="evcli-serve-pages-"))  # mode 0700: only this user reads it

    async def read(self, work: Callable[[TraceStore], T]) -> T:
        """`work(store)` on a reader thread."""
        return await self._on(self._readers, work)

    async def write(self, work: Callable[[TraceStore], T]) -> T:
        """`work(store)` on the writer thread."""
        return await self._on(self._writer, work)

    async def page(self, reference: str, as_json: bool) -> Path:
        """The session `reference` rendered by a render process, as its HTML report or its export document
        (`as_json`): a UTF-8 file for `stream_page`."""
        from concurrent.futures.process import BrokenProcessPool

        renderers = self._render_pool()
        loop = asyncio.get_running_loop()
        try:
            return Path(
                await loop.run_in_executor(renderers, render_page, self.db, reference, as_json, str(self._pages))
            )
        except BrokenProcessPool as exc:
            with self._lock:
                if self._renderers is renderers:
                    self._renderers = None
            raise RendererDied("the report renderer stopped (out of memory?); try again") from exc

    def close(self) -> None:
        self._writer.shutdown(cancel_futures=True)
        self._readers.shutdown(cancel_futures=True)
        if self._renderers is not None:
            self._renderers.shutdown(wait=False, cancel_futures=True)
        for store in self._opened:
            store.close()
        shutil.rmtree(self._pages, ignore_errors=True)

    async def _on(self, executor: Executor, work: Callable[[TraceStore], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, lambda: work(self._store()))

    def _store(self) -> TraceStore:
        store: TraceStore | None = getattr(self._local, "store", None)
        if store is None:
            from evcli.store.db import TraceStore

            store = self._local.store = TraceStore(Path(self.db))
            with self._lock:
                self._opened.append(store)
        return store

    def _render_pool(self) -> ProcessPoolExecutor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with self._lock:
            if self._renderers is None:
                context = multiprocessing.get_context("spawn")
                self._renderers = ProcessPoolExecutor(
                    RENDER_PROCESSES, mp_context=context, initializer=ignore_interrupts
                )
            return self._renderers


async def stream_page(page: Path) -> AsyncIterator[bytes]:
    """The file's bytes in SEND_CHUNK pieces, each read off the event loop; the file is removed afterwards."""
    try:
        with page.open("rb") as handle:
            while chunk := await asyncio.to_thread(handle.read, SEND_CHUNK):
                yield chunk
    finally:
        page.unlink(missing_ok=True)


def render_page(db: str, reference: str, as_json: bool, directory: str) -> str:
    """In a render process: load the session, render it into a new file in `directory`, return its path
    (NotFound, BadInput for a bad reference)."""
    from evcli.store.db import TraceStore

    store = _render_stores.get(db)
    if store is None:
        store = _render_stores[db] = TraceStore(Path(db), must_exist=True)
    document = store.load(store.resolve(reference))
    if as_json:
        from evcli.store.documents import to_canonical

        text = to_canonical(document) + "\n"
    else:
        from evcli.report import render

        text = render(document, "html")
    with tempfile.NamedTemporaryFile("wb", dir=directory, suffix=".page", delete=False) as page:
        page.write(text.encode())
    return page.name
