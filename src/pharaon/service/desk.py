"""The sales desk: purchases that arrive together are sold together (group commit).

Each server process has one desk, a thread that takes every order waiting in its queue and sells
them with :func:`pharaon.service.sales.buy_many` in one transaction, then answers each buyer.
While a batch is being sold the next orders queue up, so under load a batch grows to what
arrived meanwhile and costs one commit (one disk flush) and one lock of the hot rows, and a lone
order is sold at once. A buyer is answered only after the commit that made its purchase durable.
Nothing is kept between batches: the orders and their outcomes live in the database.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from pharaon.service import sales
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.service.plays import PlayView

MAX_BATCH = 64

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Waiting:
    order: sales.Order
    answer: Future[PlayView] = field(default_factory=Future)


class SalesDesk:
    """Sells the orders given to :meth:`buy` in batches, on its own thread (started on first
    use, stopped by :meth:`close`)."""

    def __init__(self, sessions: sessionmaker[Session], *, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._sessions = sessions
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Waiting | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, order: sales.Order) -> Future[PlayView]:
        """Queue ``order``; the future holds its play or the ServiceError that refused it."""
        waiting = _Waiting(order)
        with self._lock:
            if self._closed:
                raise RuntimeError("the sales desk is closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="pharaon-sales-desk", daemon=True
                )
                self._thread.start()
            self._queue.put(waiting)
        return waiting.answer

    async def buy(self, order: sales.Order) -> PlayView:
        """Sell ``order``, waiting without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(order))

    def close(self) -> None:
        """Sell what is queued, then stop the thread."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(more)
            # A buyer who went away before the sale (a cancelled future) is not sold anything;
            # once running, a future can no longer be cancelled.
            batch = [w for w in batch if w.answer.set_running_or_notify_cancel()]
            if batch:
                self._sell(batch)

    def _sell(self, batch: list[_Waiting]) -> None:
        try:
            with self._sessions() as session:
                outcomes = sales.buy_many(
                    session=session, orders=[w.order for w in batch], now=utcnow()
                )
        except Exception as exc:
            if len(batch) > 1:
                # A database error rolled the whole batch back: sell each order alone, so
                # one that cannot be sold does not fail the others.
                _log.warning(
                    "a batch of %d purchases failed (%s); selling one by one", len(batch), exc
                )
                for waiting in batch:
                    self._sell([waiting])
            else:
                batch[0].answer.set_exception(exc)
            return
        for waiting, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, ServiceError):
                waiting.answer.set_exception(outcome)
            else:
                waiting.answer.set_result(outcome)
