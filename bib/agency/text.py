"""The text agent: the paper's grid text and prompt, answer parsing, and :class:`TextGridAgent`.

Grid text (reference §3): a header row of column indices, then one line per row starting with
its index; cells are right-aligned in ``len(str(width)) + 1`` characters; symbols ``A`` (agent),
``#`` (wall), ``G`` (goal), ``_`` (open), ``D`` (locked door), ``K`` (key not yet taken). Each
step is one fresh single-turn prompt with no history; the answer must be bare JSON
``{"action": "<UP|DOWN|LEFT|RIGHT>"}``. Key environments add the key/door rules and
``Carrying key: True|False``. The prompt wording is ours, written from that description (the
published single-step template is not reproduced verbatim).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable

from bib.agency.endpoint import ChatClient, EndpointError
from bib.agency.env import INVALID, MOVE_NAMES, MOVES
from bib.tasks.agent_grids import GOAL
from bib.world.dynamics import AgentState
from bib.world.grid import Layout

Complete = Callable[..., str]
"""A completion function ``complete(prompt, sample="") -> text`` (may raise EndpointError)."""

_LEGEND = """Legend:
---------------
#: Wall
_: Open Space (can be visited)
G: Goal
A: Current agent position
{extra}----------------"""

_KEY_RULES = """K: Key (picked up by stepping onto it)
D: Locked door (impassable; it opens once the agent holds the key and stands next to it)
"""

_PROMPT = """# Instructions

You are controlling an agent in a grid-based environment with full observability. The agent can move in four directions: up, down, left, and right. The following symbols are used in the grid representation:

{legend}

Your objective is to navigate from the current position (A) to the goal (G) while avoiding walls (#). Importantly, the agent should aim to reach the goal using the least amount of steps possible. Moving into a wall{door} leaves the agent where it is but still costs a step.

You will receive the current state of the grid as a matrix of symbols separated by whitespace, with the index of each row and column. Positions are given as (row, col). For example, given the 4x5 grid:

  0 1 2 3 4
0 # # # # #
1 # _ _ G #
2 # A _ _ #
3 # # # # #

The goal is in position (1,3), while the agent's position A is (2,1).

The agent's possible actions are: LEFT, RIGHT, UP, DOWN.

Answer with the single next action as a JSON object and nothing else, exactly in this form:
{{"action": "<UP|DOWN|LEFT|RIGHT>"}}

# Inputs

Current grid state:

{grid}
{carrying}"""


def grid_text(layout: Layout, state: AgentState) -> str:
    """The grid as the paper's text matrix (see the module docstring)."""
    cw = len(str(layout.width)) + 1
    lw = len(str(layout.height - 1))
    goal = layout.goal_cell(GOAL)
    lines = [" " * lw + "".join(str(x).rjust(cw) for x in range(layout.width))]
    for y in range(layout.height):
        row = []
        for x in range(layout.width):
            c = (x, y)
            if c == state.cell:
                sym = "A"
            elif c == goal:
                sym = "G"
            elif c in layout.walls:
                sym = "#"
            elif c == layout.lock and not state.unlocked:
                sym = "D"
            elif c == layout.key and not state.has_key:
                sym = "K"
            else:
                sym = "_"
            row.append(sym.rjust(cw))
        lines.append(str(y).rjust(lw) + "".join(row))
    return "\n".join(lines)


def prompt(layout: Layout, state: AgentState) -> str:
    """The full single-turn prompt for ``state`` (the key/door variant when the layout has a key or door)."""
    keyed = layout.key is not None or layout.lock is not None
    return _PROMPT.format(
        legend=_LEGEND.format(extra=_KEY_RULES if keyed else ""),
        door=" or a locked door" if keyed else "",
        grid=grid_text(layout, state),
        carrying=f"\nCarrying key: {state.has_key}\n" if keyed else "",
    )


_JSON = re.compile(r"\{[^{}]*\}")


def parse_action(text: str) -> tuple[int | None, str]:
    """``(action, reason)`` from a model's answer: the last JSON object with an ``action`` field.

    Returns the ACTIONS index and ``""``, or ``None`` and ``garbage`` (no such JSON object) or
    ``illegal-move`` (an action that is not one of the 4 moves).
    """
    for chunk in reversed(_JSON.findall(text or "")):
        try:
            obj = json.loads(chunk)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "action" in obj:
            name = str(obj["action"]).strip().upper()
            if name in MOVE_NAMES:
                return MOVES[MOVE_NAMES.index(name)], ""
            return None, "illegal-move"
    return None, "garbage"


def example_prompt() -> str:
    """The prompt for the paper's 5 x 4 example grid (agent at (1, 2), goal at (3, 1)): what a preflight asks."""
    from bib.world.grid import Agent, GridObject, border_walls

    layout = Layout(5, 4, walls=border_walls(5, 4), objects=(GridObject(GOAL, "flag", (0, 0, 0), (3, 1)),),
                    agents=(Agent("agent", "pentagon", (0, 0, 0), (1, 2)),), moves=4)
    return prompt(layout, AgentState((1, 2)))


def check_endpoint(client: ChatClient, name: str | None = None) -> None:
    """The preflight of an endpoint (`bib agency run --endpoint`, `bib profile endpoint`), before any work.

    The example prompt (:func:`example_prompt`) is sent for real (not answered from the cache) up
    to ``1 + client.retries`` times, all within four fifths of ``client.timeout * (client.retries + 1)``
    seconds;
    the first answer that parses as a move (:func:`parse_action`) passes. A client error
    (HTTP 4xx but 429) is not asked again. ``name``: the endpoint as the user gave it (default:
    the client's URL). The preflight is not counted in ``client.stats`` (those count the run).

    Raises:
        BibInputError: naming the endpoint, the model and why: ``timeout``, ``connection``,
            ``http-<code>``, ``bad-response`` (not a chat completion), or an answer that is no move
            (``garbage``, ``illegal-move``, with the start of the answer).
    """
    import time

    from bib.errors import BibInputError

    budget = client.timeout * (client.retries + 1)
    deadline = time.monotonic() + 0.8 * budget  # a fifth left for closing sockets and a loaded machine
    text = example_prompt()
    why = f"timeout: no answer within {budget:g} s"
    for attempt in range(1 + client.retries):
        left = deadline - time.monotonic()
        if attempt:
            pause = min(client.backoff * 2 ** (attempt - 1), 8.0, left / 2)
            time.sleep(max(pause, 0.0))
            left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            answer = client.ask(text, timeout=min(client.timeout, left))
        except EndpointError as exc:  # (a last attempt cut short by the budget is named by --timeout too)
            why = f"timeout: no complete answer within {client.timeout:g} s" if exc.reason == "timeout" else str(exc)
            if exc.reason.startswith("http-4") and exc.reason != "http-429":
                break
            continue
        action, reason = parse_action(answer)
        if action is not None:
            return
        why = f"{reason}: its answer to the example prompt is no move ({answer[:80]!r})"
    raise BibInputError(f"endpoint {name or client.url} (model {client.model}): {why}")


class TextGridAgent:
    """Renders the grid as the paper's prompt and asks a completion function for the next move.

    Args:
        complete: ``complete(prompt, sample=...) -> text``; the sample label lets a cache tell
            apart rollouts, repeated visits of one prompt and retries.
        sample: label of this agent's rollout (e.g. ``navigation-000003/7``).
        retries: extra attempts after a failed one (timeout, HTTP error, garbage, illegal move);
            when all fail the step is :data:`INVALID` and ``last_reason`` says why.
    """

    def __init__(self, complete: Complete, sample: str = "", retries: int = 2) -> None:
        self.complete = complete
        self.sample = sample
        self.retries = retries
        self.visits: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.last_reason = ""

    def act(self, layout: Layout, state: AgentState) -> int:
        """The parsed move, or :data:`INVALID` after ``1 + retries`` failed attempts."""
        text_prompt = prompt(layout, state)
        visit = self.visits[text_prompt]
        self.visits[text_prompt] += 1
        reason = ""
        for attempt in range(1 + self.retries):
            try:
                answer = self.complete(text_prompt, sample=f"{self.sample}/v{visit}/t{attempt}")
            except EndpointError as exc:
                reason = exc.reason
            else:
                action, reason = parse_action(answer)
                if action is not None:
                    self.last_reason = ""
                    return action
            self.failures[reason] += 1
        self.last_reason = reason
        return INVALID


def shared_client(spec):
    """The process-wide :class:`bib.agency.endpoint.ChatClient` for an endpoint AgentSpec (one semaphore)."""
    from bib.agency.endpoint import client_for

    return client_for(spec.endpoint, spec.model, temperature=spec.temperature, **spec.options)
