"""The test judge in a container: `python judge_relay.py [test-judge options]`.

The test judge listens on loopback only, by design (a test double never serves a network), and
a container's loopback is its own. This starts it on 127.0.0.1:8001 inside the container, with
the options given, and relays the container's port 8000 (reached by the other services on the
compose network only; the compose file publishes it nowhere but 127.0.0.1) to it, byte for
byte. It stops the judge when it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys

LISTEN = ("0.0.0.0", 8000)  # noqa: S104 (the container's interface on the compose network)
JUDGE = ("127.0.0.1", 8001)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(ConnectionError, RuntimeError):
            writer.close()


async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    try:
        judge_reader, judge_writer = await asyncio.open_connection(*JUDGE)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, judge_writer), pipe(judge_reader, client_writer))


async def serve(judge: subprocess.Popen[bytes]) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    server = await asyncio.start_server(relay, *LISTEN)
    async with server:
        while not stop.is_set() and judge.poll() is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
    judge.terminate()
    return judge.wait(timeout=30) if stop.is_set() else (judge.returncode or 1)


def main() -> int:
    command = [sys.executable, "-m", "ragas_ops_testing.judge_server", "--port", str(JUDGE[1])]
    judge = subprocess.Popen([*command, *sys.argv[1:]])  # noqa: S603 (the test judge, its options)
    return asyncio.run(serve(judge))


if __name__ == "__main__":
    sys.exit(main())
