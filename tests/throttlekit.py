"""An upstream that sends wheels slowly: ASGI middleware around any index app.

:class:`Throttled` passes every request to the app it wraps and sends the body of
each ``.whl`` response at *rate* bytes per second, in 64 KiB pieces. With *corrupt*
set, one byte a little way into each wheel is flipped, so the body no longer has
the hash its page gives (found only once the whole file has arrived).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]
App = Callable[[Message, Receive, Send], Awaitable[None]]

PIECE = 64 << 10
CORRUPT_AT = 1 << 20


class Throttled:
    def __init__(self, app: App, rate: int, *, corrupt: bool = False) -> None:
        self.app = app
        self.rate = rate
        self.corrupt = corrupt
        self.wheels_sent = 0

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(".whl"):
            await self.app(scope, receive, send)
            return
        start = time.monotonic()
        sent = 0

        async def slow_send(message: Message) -> None:
            nonlocal sent
            if message["type"] != "http.response.body":
                await send(message)
                return
            body = bytearray(message.get("body", b""))
            if self.corrupt and sent <= CORRUPT_AT < sent + len(body):
                body[CORRUPT_AT - sent] ^= 0xFF
            for offset in range(0, len(body), PIECE):
                piece = bytes(body[offset : offset + PIECE])
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                sent += len(piece)
                ahead = sent / self.rate - (time.monotonic() - start)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            if not message.get("more_body", False):
                self.wheels_sent += 1
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app(scope, receive, slow_send)
