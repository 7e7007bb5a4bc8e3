"""The event bus: the only way parts learn what happened.

``publish`` numbers the event, masks any secret in it, appends it to the log, then hands it to each subscriber in
order of subscription, and returns. Events are numbered in the order they are published, and logged and handed
over in that order; what many agents publish at once is logged in one write (group commit). Line subscribers (the
database) get each batch's log lines as written, before the event subscribers hear of its events.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from arcengine.domain.events import Event
from arcengine.recording.batching import GroupCommit
from arcengine.recording.eventlog import EventLogWriter, lines_of
from arcengine.recording.redact import redact_event, secret_values

Subscriber = Callable[[Event], Awaitable[None]]
LineSubscriber = Callable[[str], None]


class RecordingError(Exception):
    """An event could not be recorded (the disk is full, the folder went away): the campaign must stop, since
    nothing it did from here on could be trusted or resumed."""


class Bus:
    def __init__(self, log: EventLogWriter | None, first_seq: int = 1) -> None:
        # The environment's secrets, read once: a campaign's keys are set before it starts, and scanning the
        # environment for every event would cost more than writing it.
        self._secrets = secret_values()
        self._log = log
        self._subscribers: list[Subscriber] = []
        self._line_subscribers: list[LineSubscriber] = []
        self._next_seq = first_seq
        self._record = GroupCommit(self._log_and_deliver)
        self.broken: str | None = None  # why the log cannot be written any more

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def subscribe_lines(self, subscriber: LineSubscriber) -> None:
        """Hand ``subscriber`` each batch's log lines, once they are written and before any event subscriber hears
        of them: a projection of the log (the database) then needs no second serialisation of the events."""
        self._line_subscribers.append(subscriber)

    async def publish(self, event: Event) -> Event:
        return (await self.publish_all([event]))[0]

    async def publish_all(self, events: list[Event]) -> list[Event]:
        """Publish events that belong together (a provider's reply and the candidate it brought) with one write
        to the log, so a crash keeps both or neither."""
        if self.broken is not None:
            raise RecordingError(self.broken)
        now = time.time()
        numbered = [redact_event(event.model_copy(update={"seq": self._next_seq + i, "ts": now}), self._secrets)
                    for i, event in enumerate(events)]
        self._next_seq += len(numbered)
        await self._record(numbered)
        return numbered

    async def _log_and_deliver(self, events: list[Event]) -> None:
        """One batch: every event is in the log before any subscriber hears of it."""
        if self.broken is not None:  # an earlier batch could not be written: nothing after it may be
            raise RecordingError(self.broken)
        text = lines_of(events) if self._log is not None or self._line_subscribers else ""
        if self._log is not None:
            try:
                await self._log.append_text(text)
            except OSError as error:
                self.broken = f"cannot write {self._log.path}: {error.strerror or error}"
                raise RecordingError(self.broken) from error
        for line_subscriber in self._line_subscribers:
            line_subscriber(text)
        for event in events:
            for subscriber in self._subscribers:
                await subscriber(event)
