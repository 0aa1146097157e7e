"""Ray's messages to the driver, condensed: after a worker or node death the raylet pushes the
driver up to 50 lines (the last lines of its log, its ``[state-dump]``); :class:`RayMessages`, which
:func:`condense_ray_messages` installs in place of Ray's printer, prints one line of each
(:func:`condense_ray_message`) and drops repeats. Ray's logs keep the full text.
"""

from __future__ import annotations

import io
import re
import sys
import time
from collections.abc import Callable

from tqdm import tqdm

import harness.local_ray as local_ray

#: Seconds within which a repeat of one condensed Ray message is not printed again.
RAY_MESSAGE_REPEAT_S = 10.0
#: The longest Ray message line printed (its first sentence, cut here).
RAY_MESSAGE_CHARS = 200


def condense_ray_message(text: str) -> str:
    """The first sentence of a message Ray's raylet pushed to the driver, on one line.

    After a worker or node death the raylet sends the driver messages of up to 50 lines (the last lines of its
    log, its ``[state-dump]``); the grid already names the cell it retries and why, so one sentence is kept.

    Args:
        text: the message, colour codes and all.

    Returns:
        The first line's first sentences up to at least 40 characters, without colour codes; cut at
        :data:`RAY_MESSAGE_CHARS` (ending in ``...``) where longer.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", text).strip()  # colour codes, if Ray added any
    first = text.splitlines()[0].strip() if text else ""
    # whole sentences, until there are at least 40 characters ("Raylet is terminated." alone says
    # less than "Raylet is terminated. Termination is unexpected.")
    ends = [m.start() + 1 for m in re.finditer(r"[.!?](?=\s|$)", first)]
    sentence = next((first[:e] for e in ends if e >= 40), first)
    if len(sentence) > RAY_MESSAGE_CHARS:
        sentence = sentence[: RAY_MESSAGE_CHARS - 3].rstrip() + "..."
    return sentence


class RayMessages:
    """Replaces the function through which Ray's driver prints what the raylet pushes to it
    (``ray._private.worker.print_to_stdstream``, looked up by Ray's listener thread at each call):
    a raylet message becomes one line on stderr, ``ray: <first sentence> (Ray's logs have the
    rest)``, and a repeat within :data:`RAY_MESSAGE_REPEAT_S` is dropped; anything else is passed on
    unchanged. Ray's logs keep the full text (its session folder, ``/tmp/ray/session_latest/logs``
    on the head by default). A private hook: if a Ray release renames it, Ray prints as before.
    Once the driver's own local Ray is gone (:class:`~harness.ray_session.RayLostError`) nothing
    more is printed: the driver's own line says it."""

    #: Set when the local Ray is gone: Ray's own messages about it would repeat the driver's line.
    silent = False

    def __init__(self, original: Callable, stream: Callable[[], io.TextIOBase] | None = None) -> None:
        self.original = original
        self.stream = stream or (lambda: sys.stderr)
        self.seen: dict[str, float] = {}

    @staticmethod
    def _own_ray_gone(wait_s: float = 1.0) -> bool:
        """Whether the local Ray of this driver is gone. The raylet's death can be announced before
        its process is seen ended (the kernel takes a moment to free its memory): for a while."""
        deadline = time.monotonic() + wait_s
        while local_ray.has_local_ray():
            if local_ray.lost() is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return False

    def __call__(self, data: dict, *args: object, **kwargs: object) -> None:
        if RayMessages.silent:
            return None
        if not isinstance(data, dict) or data.get("pid") != "raylet":
            return self.original(data, *args, **kwargs)
        if self._own_ray_gone():  # this driver's own Ray: its loop says so in its own line
            return None
        now = time.monotonic()
        for line in dict.fromkeys(condense_ray_message(str(m)) for m in data.get("lines", [])):
            if not line or now - self.seen.get(line, -float("inf")) < RAY_MESSAGE_REPEAT_S:
                continue
            self.seen[line] = now
            tqdm.write(f"ray: {line} (Ray's logs have the rest)", file=self.stream())


def condense_ray_messages() -> None:
    """Install :class:`RayMessages` in this driver (once; harmless if Ray lacks the hook)."""
    import ray._private.worker as ray_worker

    current = getattr(ray_worker, "print_to_stdstream", None)
    if current is not None and not isinstance(current, RayMessages):
        ray_worker.print_to_stdstream = RayMessages(current)
