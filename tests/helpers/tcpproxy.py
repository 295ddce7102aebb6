"""A loopback TCP forwarder a test can cut and restore: a real network outage to one server."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["TcpProxy"]


class TcpProxy:
    """Forwards 127.0.0.1:port to ``target``; ``cut`` closes the port and every connection
    through it (as a lost route would), ``restore`` listens on the same port again."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    restore = start

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._open.update((writer, up_writer))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._open.difference_update((writer, up_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
