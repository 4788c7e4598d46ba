"""OpenAI-compatible chat-completions client (standard library only): timeout, retries, bounded concurrency, cache.

Any local server that speaks ``POST <base>/chat/completions`` works (vLLM, llama.cpp, Ollama).
Each prompt is one user message. Transport failures (timeout, refused connection, HTTP 429 and
5xx, a body that is not a chat completion) are retried with exponential backoff up to
``retries`` times and then raised as :class:`EndpointError` with a short ``reason``; an attempt
never lasts longer than ``timeout`` seconds, the whole exchange (connecting, sending, the status
line and headers, and the body, however slowly it drips) under one deadline, so a run cannot hang.
At most
``concurrency`` requests are in flight per client. Answers are cached by
``sha256(model, prompt, sampling settings, sample label)``: in memory, and as one JSON file per
answer under ``cache_dir`` when given (atomic writes), so a rerun replays a run exactly.

Bounded (issue 39): an answer body larger than :data:`BODY_MAX` (1 MiB; a chat completion is a few
kB) is refused as ``bad-response`` without reading the rest; the answer cache keeps at most
:data:`CACHE_MAX` bytes and nothing older than :data:`CACHE_AGE` seconds (the oldest answers go
first: pruned when a client opens the folder and whenever its answers pass the cap), and
`bib cache clear` empties it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from functools import lru_cache
from pathlib import Path

from bib.guard import read_json
from bib.io import atomic_write_text

BODY_MAX = 1 << 20
"""Largest answer body read from an endpoint (1 MiB)."""
CACHE_MAX = 256 << 20
"""Largest answer cache per endpoint and model folder (256 MiB); the oldest answers are removed first."""
CACHE_AGE = 30 * 24 * 3600
"""Oldest cached answer kept (30 days)."""


class EndpointError(Exception):
    """A request that failed after its retries; ``reason`` is ``timeout``, ``connection``, ``http-<code>`` or ``bad-response``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class ChatClient:
    """A chat-completions client (see the module docstring).

    Args:
        endpoint: base URL such as ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is
            appended unless already there).
        model: model name sent with every request.
        temperature: sampling temperature (the paper: 0.7).
        top_p: nucleus sampling (the paper: 0.95).
        max_tokens: answer length cap, or None for the server default.
        timeout: seconds per attempt: the deadline of the whole exchange, answer included.
        retries: extra attempts after a transport failure.
        backoff: first retry delay in seconds (doubled each time, capped at 8 s).
        concurrency: requests in flight at most.
        cache_dir: folder of cached answers, or None for memory only.
    """

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        concurrency: int = 4,
        cache_dir: str | Path | None = None,
    ) -> None:
        base = endpoint.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self.sampling = {"temperature": temperature, "top_p": top_p}
        if max_tokens is not None:
            self.sampling["max_tokens"] = max_tokens
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.slots = threading.BoundedSemaphore(max(1, concurrency))
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.cache_bytes = prune_cache(self.cache_dir) if self.cache_dir is not None else 0
        self.memory: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stats = {"requests": 0, "cache_hits": 0, "failures": 0, "retries": 0}

    def key(self, prompt: str, sample: str = "") -> str:
        """The cache key of a prompt (with the model, sampling settings and sample label)."""
        blob = json.dumps({"model": self.model, "prompt": prompt, "sampling": self.sampling, "sample": sample},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> str | None:
        with self.lock:
            if key in self.memory:
                return self.memory[key]
        if self.cache_dir is not None:
            path = self.cache_dir / f"{key}.json"
            if path.is_file():
                try:
                    text = read_json(path, 2 * BODY_MAX)["content"]
                except (OSError, ValueError, KeyError, TypeError):
                    return None
                with self.lock:
                    self.memory[key] = text
                return text
        return None

    def _store(self, key: str, text: str) -> None:
        with self.lock:
            self.memory[key] = text
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            blob = json.dumps({"model": self.model, "content": text}) + "\n"
            atomic_write_text(self.cache_dir / f"{key}.json", blob)
            with self.lock:
                self.cache_bytes += len(blob.encode())
                over = self.cache_bytes > CACHE_MAX
            if over:
                left = prune_cache(self.cache_dir)
                with self.lock:
                    self.cache_bytes = left

    def complete(self, prompt: str, sample: str = "") -> str:
        """The model's answer to a single-turn ``prompt`` (cached); EndpointError after the retries."""
        key = self.key(prompt, sample)
        hit = self._cached(key)
        if hit is not None:
            with self.lock:
                self.stats["cache_hits"] += 1
            return hit
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **self.sampling}
        body["seed"] = int(key[:8], 16)
        data = json.dumps(body).encode()
        last = EndpointError("connection")
        for attempt in range(1 + self.retries):
            if attempt:
                with self.lock:
                    self.stats["retries"] += 1
                time.sleep(min(self.backoff * 2 ** (attempt - 1), 8.0))
            try:
                with self.slots:
                    with self.lock:
                        self.stats["requests"] += 1
                    text = self._post(data)
            except EndpointError as exc:
                last = exc
                if exc.reason.startswith("http-4") and exc.reason != "http-429":
                    break  # a client error will not go away
                continue
            self._store(key, text)
            return text
        with self.lock:
            self.stats["failures"] += 1
        raise last

    def ask(self, prompt: str, timeout: float | None = None) -> str:
        """One request for ``prompt``, neither read from nor written to the cache and not retried,
        within ``timeout`` seconds (default: the client's) for the whole exchange: what a preflight
        asks (:func:`bib.agency.text.check_endpoint`); not counted in ``stats``. EndpointError when it fails."""
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **self.sampling}
        with self.slots:
            return self._post(json.dumps(body).encode(), self.timeout if timeout is None else timeout)

    def _post(self, data: bytes, timeout: float | None = None) -> str:
        return _answer(_exchange(self.url, data, self.timeout if timeout is None else timeout))


def _exchange(url: str, data: bytes, timeout: float) -> bytes:
    """POST ``data`` to ``url`` and return the body of a 2xx answer, all within ``timeout`` seconds.

    A socket timeout bounds each read, not the exchange: a server that sends a byte now and then
    would keep ``resp.read`` waiting for ever. So a timer shuts the socket down at the deadline,
    which ends whatever read is waiting; the exchange then counts as timed out.
    """
    import http.client
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # an IPv6 typo ("http://[::1/v1"), a port that is not a number
        raise EndpointError("connection", str(exc)) from None
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    late = threading.Event()
    conn = kind(parts.hostname or "", port, timeout=timeout)

    def expire() -> None:
        late.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        conn.request("POST", target, body=data,
                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        resp = conn.getresponse()
        if late.is_set():
            raise TimeoutError
        if not 200 <= resp.status < 300:
            raise EndpointError(f"http-{resp.status}", resp.reason)
        length = resp.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > BODY_MAX:
            raise EndpointError("bad-response", f"an answer of {int(length):,} bytes; bib reads at most {BODY_MAX:,}")
        chunks, size = [], 0
        while not late.is_set():
            chunk = resp.read1(65536)  # returns what one read brings: the deadline is checked between reads
            if not chunk:
                break
            size += len(chunk)
            if size > BODY_MAX:  # refused as it passes the cap: memory stays bounded whatever the server sends
                raise EndpointError("bad-response", f"an answer of more than {BODY_MAX:,} bytes; bib reads at most "
                                    f"{BODY_MAX:,}")
            chunks.append(chunk)
        if late.is_set():
            raise TimeoutError
        return b"".join(chunks)
    except EndpointError:
        raise
    except TimeoutError:
        raise EndpointError("timeout", f"no complete answer within {timeout:g} s") from None
    except (http.client.HTTPException, OSError) as exc:
        if late.is_set():
            raise EndpointError("timeout", f"no complete answer within {timeout:g} s") from None
        raise EndpointError("connection", str(getattr(exc, "strerror", None) or exc)) from None
    finally:
        timer.cancel()
        conn.close()


def _answer(body: bytes) -> str:
    """The message content of a chat-completion body; EndpointError ``bad-response`` otherwise."""
    try:
        payload = json.loads(body.decode("utf-8"))
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise EndpointError("bad-response", "not a chat completion") from None
    if not isinstance(content, str):
        raise EndpointError("bad-response", "message content is not text")
    return content


def check_reachable(endpoint: str, timeout: float) -> None:
    """Raise BibInputError unless a TCP connection to the endpoint's host and port opens within
    ``timeout`` seconds: `bib agency run --endpoint` checks this before any work, instead of
    recording every step of the run as an invalid ``connection`` step (answers already in the
    cache are still replayed from it; the server must be up to start a run)."""
    from urllib.parse import urlsplit

    from bib.errors import BibInputError

    try:
        parts = urlsplit(endpoint)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port that is not a number
        raise BibInputError(f"--endpoint {endpoint}: {exc}") from None
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise BibInputError(f"--endpoint {endpoint}: cannot connect to {host}:{port} ({exc.strerror or exc})") from None


def default_cache_dir(endpoint: str, model: str) -> Path:
    """Where `bib agency run --endpoint` keeps answers unless ``--cache`` says otherwise.

    ``$XDG_CACHE_HOME/bib/endpoint/<16 hex digits of sha256(endpoint, model)>`` (``~/.cache`` when
    the variable is unset): outside the run's ``--out``, which is written into a temporary folder
    and renamed at the end, so the answers of a failed or interrupted run are kept and a rerun
    replays them instead of asking again. One folder per endpoint and model, so two servers that
    call different models by the same name never share answers.
    """
    tag = hashlib.sha256(f"{endpoint.rstrip('/')}\n{model}".encode()).hexdigest()[:16]
    return cache_root() / tag


def cache_root() -> Path:
    """The folder of every endpoint's answer cache: ``$XDG_CACHE_HOME/bib/endpoint`` (``~/.cache/...``)."""
    import os

    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bib" / "endpoint"


def _answers(folder: Path) -> list[tuple[float, int, Path]]:
    """(modified time, size, path) of the cached answers of ``folder`` (regular ``*.json`` files only)."""
    import os
    import stat

    out = []
    with contextlib.suppress(OSError):
        with os.scandir(folder) as entries:
            for e in entries:
                if not e.name.endswith(".json"):
                    continue
                with contextlib.suppress(OSError):
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        out.append((st.st_mtime, st.st_size, Path(e.path)))
    return out


def prune_cache(folder: Path, max_bytes: int = CACHE_MAX, max_age: float = CACHE_AGE,
                now: float | None = None) -> int:
    """Remove the answers of ``folder`` older than ``max_age`` seconds, then the oldest until the rest
    hold at most ``max_bytes``; return the bytes kept. A missing folder holds 0."""
    now = time.time() if now is None else now
    kept = 0
    for mtime, size, path in sorted(_answers(folder), reverse=True):  # newest first
        if now - mtime > max_age or kept + size > max_bytes:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        kept += size
    return kept


def clear_cache(root: Path | None = None) -> tuple[int, int]:
    """Remove every cached answer under ``root`` (default :func:`cache_root`); return (files, bytes).
    Only the answer files (``<64 hex>.json``) of its folders are removed, and links are not followed."""
    import re

    root = cache_root() if root is None else root
    files = size = 0
    if not root.is_dir() or root.is_symlink():
        return 0, 0
    for sub in sorted(root.iterdir()):
        if sub.is_symlink() or not sub.is_dir():
            continue
        for _, n, path in _answers(sub):
            if re.fullmatch(r"[0-9a-f]{64}\.json", path.name):
                with contextlib.suppress(OSError):
                    path.unlink()
                    files += 1
                    size += n
        with contextlib.suppress(OSError):
            sub.rmdir()  # when empty
    return files, size


@lru_cache(maxsize=16)
def _client(endpoint: str, model: str, frozen: tuple) -> ChatClient:
    return ChatClient(endpoint, model, **dict(frozen))


def client_for(endpoint: str, model: str, **options) -> ChatClient:
    """One shared client per (endpoint, model, options) in this process, so threads share its semaphore and cache."""
    return _client(endpoint, model, tuple(sorted(options.items())))
