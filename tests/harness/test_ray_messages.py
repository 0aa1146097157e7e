"""What Ray's raylet pushes to the driver after a worker or node death, as the grid prints it:
one line per message, once (the end-to-end case, a real node killed, is in test_cluster_recovery)."""

import io

from harness.ray_messages import RAY_MESSAGE_CHARS, RayMessages, condense_ray_message

# the shape of the message a real raylet death produced (Ray 2.60): a first line, then the last
# lines of its log, most of them its state dump
DUMP = ("Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL by the "
        "user or system OOM killer, (2) Invalid memory access. Last 20 lines of the Raylet logs:\n"
        + "".join(f"    [state-dump] \tNodeManager.timer_{i} - 1 total (1 active), Execution time: "
                  f"mean = 0.00ms\n" for i in range(40))
        + "    [2026-11-23 14:52:18,179 I 9413 9413] (raylet) worker_pool.cc:564: Started worker\n")
NODE = ("The node with node id: " + "0d04" * 14 + " and address: 192.0.2.2 and node name: 192.0.2.2 "
        "has been marked dead because "
        "the detector has missed too many heartbeats from it. This can happen when a \t(1) raylet "
        "crashes unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats.")


def test_a_message_is_cut_to_whole_sentences_of_at_least_40_characters() -> None:
    assert condense_ray_message(DUMP) == "Raylet is terminated. Termination is unexpected."
    assert condense_ray_message("A worker died. It was killed by the system. More.") == (
        "A worker died. It was killed by the system.")
    assert condense_ray_message("\x1b[33mNo sentence end here") == "No sentence end here"
    long = condense_ray_message(NODE)
    assert len(long) == RAY_MESSAGE_CHARS and long.endswith("...") and "\n" not in long
    assert NODE.startswith(long[:-3])
    assert condense_ray_message("") == "" and condense_ray_message("v1.2 is out") == "v1.2 is out"


def test_raylet_messages_become_one_line_each_once_and_others_pass_through() -> None:
    passed: list = []
    out = io.StringIO()
    hook = RayMessages(lambda data, **kw: passed.append((data, kw)), stream=lambda: out)
    for _ in range(2):  # Ray may push one message twice
        hook({"lines": [DUMP], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    hook({"lines": [NODE], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    other = {"lines": ["a worker's own output"], "pid": 1234, "is_err": True}
    hook(other, ignore_prefix=True)
    lines = out.getvalue().splitlines()
    assert lines == ["ray: Raylet is terminated. Termination is unexpected. (Ray's logs have the rest)",
                     f"ray: {condense_ray_message(NODE)} (Ray's logs have the rest)"]
    assert passed == [(other, {"ignore_prefix": True})]
    assert "[state-dump]" not in out.getvalue()
