"""``--listen HOST:PORT`` for ``artifactize server run``: parsing, the loopback check, binding.

Kept apart from the HTTP server module so the CLI can check an address without importing
uvicorn and starlette.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

DEFAULT_LISTEN = "127.0.0.1:8417"
PORT_MAX = 65535
LOCALHOST = "localhost"
_PORT = re.compile(r"[0-9]{1,5}")
_RULE = "use HOST:PORT with an IP address or localhost, e.g. 127.0.0.1:8417 or [::1]:8417"


class ListenError(ValueError):
    """An unusable ``--listen`` address; the message names it and the rule."""


@dataclass(frozen=True)
class ListenAddress:
    host: str  # an IP literal (IPv6 without brackets) or "localhost"
    port: int  # 0: the system picks a free port when binding

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return self.host == LOCALHOST or ipaddress.ip_address(self.host).is_loopback


def parse_listen(text: str) -> ListenAddress:
    host, sep, port = text.rpartition(":")
    if not sep or _PORT.fullmatch(port) is None or int(port) > PORT_MAX:
        raise ListenError(f"Invalid listen address {text!r}: {_RULE}.")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if ":" not in host:
            raise ListenError(f"Invalid listen address {text!r}: {_RULE}.")
    elif ":" in host:
        raise ListenError(f"Invalid listen address {text!r}: put an IPv6 address in brackets.")
    if host != LOCALHOST:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ListenError(f"Invalid listen address {text!r}: {_RULE}.") from None
    return ListenAddress(host, int(port))


def bind(address: ListenAddress) -> socket.socket:
    """A listening, non-blocking socket on ``address``; OSError when the system refuses
    (the port is taken, the address is not ours)."""
    host = "127.0.0.1" if address.host == LOCALHOST else address.host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # An explicit IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say TCP, and
    # without it every answer written in two parts waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, address.port))
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
