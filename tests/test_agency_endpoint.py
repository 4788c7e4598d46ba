"""The text agent and the chat-completions client against small HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from bib.agency.agents import AgentSpec
from bib.agency.endpoint import ChatClient, EndpointError
from bib.agency.env import INVALID, Grid, load_grid, run_rollouts
from bib.agency.suite import run_suite
from bib.agency.text import TextGridAgent, grid_text, parse_action, prompt
from bib.tasks.agent_grids import GOAL
from bib.world.dynamics import AgentState
from bib.world.grid import Agent, GridObject, Layout, border_walls


def oracle_answer(text: str) -> str:
    """Read the grid back from the prompt text and answer a shortest-path move (BFS from G, or from K first)."""
    block = text.split("Current grid state:\n\n", 1)[1].split("\n\n")[0].strip("\n").splitlines()[1:]
    cells = {}
    for line in block:
        row, *syms = line.split()
        for col, s in enumerate(syms):
            cells[(int(row), col)] = s
    start = next(c for c, s in cells.items() if s == "A")
    blocked = "#" if "Carrying key: True" in text else "#D"
    for target in ("G", "K"):  # the goal, or first the key when a locked door cuts the goal off
        goal = next(c for c, s in cells.items() if s == target)
        dist = {goal: 0}
        queue = deque([goal])
        while queue:
            r, c = queue.popleft()
            for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if cells.get(n, "#") not in blocked and n not in dist:
                    dist[n] = dist[(r, c)] + 1
                    queue.append(n)
        if start in dist:
            break
    r, c = start
    for name, n in (("UP", (r - 1, c)), ("DOWN", (r + 1, c)), ("LEFT", (r, c - 1)), ("RIGHT", (r, c + 1))):
        if dist.get(n, 10**9) == dist[start] - 1:
            return json.dumps({"action": name})
    raise AssertionError("no move")


class Server:
    """A loopback chat-completions server whose behaviour is a function of the prompt."""

    def __init__(self, behaviour: str, delay: float = 0.0) -> None:
        self.behaviour = behaviour
        self.delay = delay
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # silence
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.requests += 1
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    outer.bodies.append(body)
                try:
                    if outer.behaviour == "stall":
                        time.sleep(2.0)
                    time.sleep(outer.delay)
                    if outer.behaviour == "http-500":
                        outer.done(lock)
                        self.send_response(500)
                        self.end_headers()
                        return
                    content = {
                        "oracle": lambda: oracle_answer(body["messages"][0]["content"]),
                        "drip": lambda: '{"action": "UP"}',
                        "drip-headers": lambda: '{"action": "UP"}',
                        "stall": lambda: '{"action": "UP"}',
                        "garbage": lambda: "I would probably go up, maybe.",
                        "illegal": lambda: '{"action": "JUMP"}',
                        "not-json": lambda: "",
                        "huge": lambda: "x" * (3 << 20),
                        "huge-unsized": lambda: "x" * (3 << 20),
                    }[outer.behaviour]()
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
                    if outer.behaviour == "not-json":
                        payload = "<html>oops</html>"
                    data = payload.encode()
                    outer.done(lock)  # before answering: the client frees its slot only after reading
                    if outer.behaviour == "drip-headers":  # the status line, then a header every 0.2 s, for ever
                        self.wfile.write(b"HTTP/1.0 200 OK\r\n")
                        for i in range(600):
                            self.wfile.write(f"X-Drip-{i}: 1\r\n".encode())
                            self.wfile.flush()
                            time.sleep(0.2)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if outer.behaviour != "huge-unsized":  # no length: the body runs until the connection closes
                        self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if outer.behaviour == "drip":  # a byte every 0.2 s: each read gets data before a socket timeout
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.2)
                        return
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def done(self, lock: threading.Lock) -> None:
        with lock:
            self.in_flight -= 1

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _layout() -> Layout:
    walls = border_walls(5, 4)
    return Layout(5, 4, walls=walls, objects=(GridObject(GOAL, "flag", (1, 2, 3), (3, 1)),),
                  agents=(Agent("a", "pentagon", (1, 2, 3), (1, 2)),), moves=4)


def test_grid_text_reproduces_the_papers_example() -> None:
    text = grid_text(_layout(), AgentState((1, 2)))
    assert text == "  0 1 2 3 4\n0 # # # # #\n1 # _ _ G #\n2 # A _ _ #\n3 # # # # #"
    grid = load_grid("key-door", 0, 0)
    p = prompt(grid.layout, grid.start)
    assert "D" in grid_text(grid.layout, grid.start) and "K" in grid_text(grid.layout, grid.start)
    assert "Carrying key: False" in p and '{"action": "<UP|DOWN|LEFT|RIGHT>"}' in p
    assert "least amount of steps possible" in p
    wide = grid_text(load_grid("navigation", 29, 0).layout, load_grid("navigation", 29, 0).start)
    assert wide.splitlines()[0].endswith(" 13 14") and wide.splitlines()[-1].startswith("14")


@pytest.mark.parametrize(("answer", "action", "reason"), [
    ('{"action": "UP"}', 0, ""),
    ('Thinking... the goal is left. {"action":"left"}', 6, ""),
    ('{"action": "DOWN"} then {"action": "RIGHT"}', 2, ""),
    ('{"action": "JUMP"}', None, "illegal-move"),
    ("go up", None, "garbage"),
    ('{"action": ', None, "garbage"),
    ("", None, "garbage"),
])
def test_parse_action(answer: str, action, reason: str) -> None:
    assert parse_action(answer) == (action, reason)


def test_text_agent_through_the_endpoint_follows_the_grid_and_caches(tmp_path) -> None:
    with Server("oracle") as srv:
        client = ChatClient(srv.url, "tiny", timeout=5, retries=0, cache_dir=tmp_path / "cache")
        for task, index in (("navigation", 23), ("key-door", 2), ("two-path-key", 1)):
            grid = load_grid(task, index, 0)
            ros = run_rollouts([TextGridAgent(client.complete, sample=f"{grid.id}/0")], grid)
            assert ros[0].success and all(ros[0].optimal), task  # the text encodes the grid faithfully
        first = srv.requests
        assert srv.bodies[0]["model"] == "tiny" and srv.bodies[0]["messages"][0]["role"] == "user"
        # a fresh client on the same cache folder replays without a single request
        again = ChatClient(srv.url, "tiny", timeout=5, retries=0, cache_dir=tmp_path / "cache")
        grid = load_grid("navigation", 23, 0)
        ros = run_rollouts([TextGridAgent(again.complete, sample=f"{grid.id}/0")], grid)
        assert ros[0].success and srv.requests == first and again.stats["cache_hits"] == ros[0].n_steps


@pytest.mark.parametrize(("behaviour", "reason"), [
    ("stall", "timeout"), ("garbage", "garbage"), ("illegal", "illegal-move"),
    ("http-500", "http-500"), ("not-json", "bad-response"),
])
def test_endpoint_failures_are_invalid_steps_and_bounded(behaviour: str, reason: str) -> None:
    grid = _short_grid()
    # bounded: (1 + agent retries) asks per step; transport failures also get (1 + client retries) requests
    per_ask = 2 if reason in ("timeout", "http-500", "bad-response") else 1
    expected = grid.max_steps * 2 * per_ask
    with Server(behaviour) as srv:
        # only the stalling server is meant to time out; the others answer at once, so a loaded machine
        # must not turn their slow answers into timeouts (and retries)
        client = ChatClient(srv.url, "m", timeout=0.3 if behaviour == "stall" else 30.0, retries=1, backoff=0.01)
        agent = TextGridAgent(client.complete, sample="s", retries=1)
        (ro,) = run_rollouts([agent], grid)
        # a timed-out request is counted when the server's thread reads it, which can be after the
        # client gave up: wait for the count (a missing request still fails, after the deadline)
        deadline = time.monotonic() + 20
        while srv.requests < expected and time.monotonic() < deadline:
            time.sleep(0.02)
    assert ro.kinds == ["invalid"] * grid.max_steps and ro.actions == [INVALID] * grid.max_steps
    assert ro.reasons == [reason] * grid.max_steps and not ro.success
    assert srv.requests == expected


def _short_grid() -> Grid:
    return next(g for g in (load_grid("navigation", i, 0) for i in range(60)) if g.optimal_length <= 2)


def test_client_errors_name_the_reason() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", "m", timeout=0.5, retries=0)
    with pytest.raises(EndpointError) as err:
        client.complete("hi")
    assert err.value.reason == "connection"
    assert ChatClient("http://h/v1/chat/completions", "m").url == "http://h/v1/chat/completions"


def test_endpoint_suite_bounds_concurrency_and_summarises_failures(tmp_path) -> None:
    with Server("oracle", delay=0.05) as srv:
        spec = AgentSpec("endpoint", endpoint=srv.url, model="tiny", temperature=0.7,
                         options={"timeout": 5.0, "retries": 0, "concurrency": 2, "cache_dir": str(tmp_path / "c")})
        result = run_suite("keys", spec, tmp_path / "run", grids=2, rollouts=1, workers=4, meg=False)
        assert srv.max_in_flight <= 2 and srv.requests > 0
    assert (result.tables["summary"]["success"] == 1.0).all()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert result.meta == meta
    assert meta["agent"] == "endpoint:tiny" and meta["invalid_steps"] == 0
    assert meta["endpoint"]["requests"] == srv.requests == meta["steps"] and meta["endpoint"]["failures"] == 0
    with Server("garbage") as srv:
        spec = AgentSpec("endpoint", endpoint=srv.url, model="bad",
                         options={"timeout": 2.0, "retries": 0, "concurrency": 2})
        run_suite("keys", spec, tmp_path / "bad", grids=1, rollouts=1, workers=2, meg=False)
    meta = json.loads((tmp_path / "bad" / "run.json").read_text())
    assert meta["invalid_steps"] == meta["steps"] > 0 and set(meta["invalid_reasons"]) == {"garbage"}
    assert "Invalid steps" in (tmp_path / "bad" / "tables.md").read_text()


def test_sampling_labels_separate_rollouts_and_revisits() -> None:
    calls: list[str] = []

    def complete(text: str, sample: str = "") -> str:
        calls.append(sample)
        return '{"action": "LEFT"}'

    lay = _layout()
    agent = TextGridAgent(complete, sample="g/3")
    state = AgentState((1, 2))
    assert agent.act(lay, state) == 6 and agent.act(lay, state) == 6
    assert calls == ["g/3/v0/t0", "g/3/v1/t0"]
    np.testing.assert_equal(len(set(calls)), 2)


def test_cli_endpoint_run_caches_outside_out_and_a_failed_run_keeps_the_answers(tmp_path, monkeypatch) -> None:
    """--out is written atomically (a temporary sibling renamed at the end), so the answer cache lives
    outside it (default: $XDG_CACHE_HOME/bib/endpoint/<endpoint+model>): a run that fails leaves no
    --out and no temporary folder, and its rerun replays every answer from the cache (the preflight,
    one request per run, is asked for real)."""
    from typer.testing import CliRunner

    import bib.agency.tables
    from bib.agency.endpoint import _client, default_cache_dir
    from bib.cli import app

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    out = tmp_path / "runs" / "llm"
    with Server("oracle") as srv:
        args = ["agency", "run", "--endpoint", srv.url, "--model", "tiny", "--suite", "keys", "--grids", "1", "--no-meg",
                "--timeout", "5", "--retries", "0", "--workers", "2", "--out", str(out)]
        cache = default_cache_dir(srv.url, "tiny")
        assert cache == tmp_path / "xdg" / "bib" / "endpoint" / cache.name and len(cache.name) == 16
        write_tables = bib.agency.tables.write_tables

        def fail(folder):  # noqa: ANN001, ANN202
            raise RuntimeError("disk full")

        monkeypatch.setattr(bib.agency.tables, "write_tables", fail)
        _client.cache_clear()
        res = CliRunner().invoke(app, args)
        assert res.exit_code != 0 and isinstance(res.exception, RuntimeError)
        assert not out.exists() and list((tmp_path / "runs").iterdir()) == []  # nothing half-written
        asked = srv.requests
        assert asked > 1 and len(list(cache.glob("*.json"))) == asked - 1  # all but the preflight's, never cached
        monkeypatch.setattr(bib.agency.tables, "write_tables", write_tables)
        _client.cache_clear()  # a new process: answers come from the folder, not memory
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert srv.requests == asked + 1  # replayed: not one new request but the preflight's
    assert "| key-door | base | 1 | 1 | 1.000 | 1.000 | 1.000 |" in res.output
    assert f"endpoint answers cached in {cache}" in res.output
    assert not (out / "cache").exists() and (out / "provenance.json").is_file()
    assert srv.bodies[0]["temperature"] == 0.7 and srv.bodies[0]["top_p"] == 0.95


@pytest.mark.parametrize("behaviour", ["drip", "drip-headers", "stall"])
def test_one_deadline_holds_for_the_whole_exchange(behaviour: str) -> None:
    """A server that drips its body or its headers a byte / a line every 0.2 s never lets a socket
    timeout of 1 s fire, yet the attempt ends at 1 s (issue 28 item 6)."""
    with Server(behaviour) as srv:
        client = ChatClient(srv.url, "m", timeout=1.0, retries=0)
        start = time.monotonic()
        with pytest.raises(EndpointError) as err:
            client.complete("hi")
        took = time.monotonic() - start
    assert err.value.reason == "timeout" and str(err.value) == "timeout: no complete answer within 1 s"
    assert 0.9 < took < 1.9, took
    with Server("drip") as srv:  # the same drip is a good answer when the deadline leaves it time (16 bytes, 3.2 s)
        assert ChatClient(srv.url, "m", timeout=30.0, retries=0).complete("hi") == '{"action": "UP"}'


@pytest.mark.parametrize(("behaviour", "why"), [
    ("http-500", "http-500: Internal Server Error"),
    ("not-json", "bad-response: not a chat completion"),
    ("garbage", "garbage: its answer to the example prompt is no move ('I would probably go up, maybe.')"),
    ("illegal", """illegal-move: its answer to the example prompt is no move ('{"action": "JUMP"}')"""),
    ("drip", "timeout: no complete answer within 1 s"),
])
def test_preflight_refuses_a_bad_endpoint_within_timeout_times_tries(behaviour: str, why: str) -> None:
    from bib.agency.text import check_endpoint
    from bib.errors import BibInputError

    with Server(behaviour) as srv:
        client = ChatClient(srv.url, "m", timeout=1.0 if behaviour == "drip" else 5.0, retries=1, backoff=0.01,
                            cache_dir=None)
        start = time.monotonic()
        with pytest.raises(BibInputError) as err:
            check_endpoint(client, srv.url)
        took = time.monotonic() - start
        deadline = time.monotonic() + 5
        while srv.requests < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert str(err.value) == f"endpoint {srv.url} (model m): {why}"
    assert took < client.timeout * (client.retries + 1), took
    # asked twice (a loaded machine may leave the timed-out drip no time for a second ask); not counted as
    # the run's requests
    assert srv.requests == 2 or (behaviour == "drip" and srv.requests == 1), srv.requests
    assert client.stats["requests"] == 0


def test_preflight_asks_for_real_and_passes_a_move(tmp_path) -> None:
    from bib.agency.text import check_endpoint, example_prompt

    with Server("oracle") as srv:
        client = ChatClient(srv.url, "m", timeout=5.0, retries=1, cache_dir=tmp_path / "c")
        check_endpoint(client)
        check_endpoint(client)
        assert srv.requests == 2 and not (tmp_path / "c").exists()  # never from, nor into, the cache
    assert srv.bodies[0]["messages"][0]["content"] == example_prompt()
    assert "  0 1 2 3 4\n0 # # # # #\n1 # _ _ G #\n2 # A _ _ #\n3 # # # # #\n" in example_prompt()  # the paper's example


def test_cli_agency_run_refuses_a_bad_endpoint_before_the_run(tmp_path) -> None:
    import subprocess
    import sys

    out = tmp_path / "run"
    with Server("http-500") as srv:
        start = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "bib.cli", "agency", "run", "--suite", "keys", "--endpoint", srv.url,
                              "--model", "m", "--timeout", "2", "--retries", "1", "--cache", str(tmp_path / "c"),
                              "--out", str(out)], capture_output=True, text=True, timeout=120)
        took = time.monotonic() - start
    assert run.returncode == 2 and run.stderr == f"bib: error: endpoint {srv.url} (model m): http-500: Internal Server Error\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no --out, no cache
    assert srv.requests == 2 and took < 60  # the whole process, imports included; the check itself is timed above


# --- issue 39: bounded answers, a bounded cache, `bib cache clear` ----------------------------------


@pytest.mark.parametrize("behaviour", ["huge", "huge-unsized"])
def test_an_answer_over_1_mib_is_refused_before_it_is_read_whole(behaviour: str) -> None:
    """A 3 MiB answer (declared, or streamed without a length) is a bad-response, not 3 MiB in memory."""
    from bib.agency.endpoint import BODY_MAX

    with Server(behaviour) as srv:
        client = ChatClient(srv.url, "m", timeout=30.0, retries=0)
        with pytest.raises(EndpointError) as err:
            client.complete("hi")
    assert err.value.reason == "bad-response"
    assert f"bib reads at most {BODY_MAX:,}" in str(err.value) and BODY_MAX == 1 << 20


def test_the_answer_cache_is_capped_by_age_and_size(tmp_path) -> None:
    from bib.agency.endpoint import CACHE_AGE, prune_cache

    now = 1_000_000_000.0
    for i, (age, size) in enumerate([(10, 100), (20, 100), (30, 100), (CACHE_AGE + 1, 10)]):
        p = tmp_path / f"{i:064x}.json"
        p.write_bytes(b"x" * size)
        os.utime(p, (now - age, now - age))
    (tmp_path / "notes.txt").write_text("not an answer")
    assert prune_cache(tmp_path, max_bytes=250, now=now) == 200  # the too-old one, then the oldest of the rest
    assert sorted(p.name[-6:] for p in tmp_path.iterdir()) == ["0.json", "1.json", "es.txt"]
    # a client opening the folder prunes it too (here: everything is older than 30 days)
    ChatClient("http://127.0.0.1:9/v1", "m", cache_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_bib_cache_clear_removes_only_cached_answers(tmp_path, monkeypatch, capsys) -> None:
    from bib.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "bib" / "endpoint" / "0123456789abcdef"
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"{i:064x}.json").write_text('{"content": "UP"}\n')
    (tmp_path / "keep.json").write_text("{}")
    os.symlink(tmp_path / "keep.json", folder / f"{9:064x}.json")  # a link: left alone, never followed
    with pytest.raises(SystemExit) as exc:
        main(["cache", "clear"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("removed 3 cached answers (0.0 MiB) from ") and out.strip().endswith("bib/endpoint")
    assert (tmp_path / "keep.json").read_text() == "{}"
    assert sorted(p.name for p in folder.iterdir()) == [f"{9:064x}.json"]


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://[fe80::1%eth0/v1", "http://h:port/v1"])
def test_a_malformed_endpoint_is_one_line(url: str) -> None:
    from bib.agency.endpoint import check_reachable
    from bib.errors import BibInputError

    with pytest.raises(BibInputError) as err:
        check_reachable(url, 0.5)
    assert str(err.value).startswith(f"--endpoint {url}: ") and "\n" not in str(err.value)
    with pytest.raises(EndpointError) as exc:
        ChatClient(url, "m", timeout=0.5, retries=0).complete("hi")
    assert exc.value.reason == "connection"
