"""One program of the suite in a long-lived process, run on command.

Started as `python3 worker.py NAME`; builds the program, warms it up, prints one JSON
line `{"ready": NAME, ...}`, then reads commands from standard input, one per line:

- `run T0 SECONDS WARM`: from T0 - WARM (unix seconds) take steps until T0 + SECONDS;
  print `{"name", "steps", "rate", ...}` where rate is steps per second between the
  first and the last step that ended inside [T0, T0 + SECONDS].
- `quit`: exit.

Building each program once and telling it when to run keeps a measurement round down
to its own seconds (starting PyTorch costs several).
"""

import json
import os
import sys
import time

import torch

from programs import PROGRAMS


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run(step, t0, seconds, warm):
    delay = t0 - warm - time.time()
    if delay > 0:
        time.sleep(delay)
    end = t0 + seconds
    ends = []
    while True:
        step()
        now = time.time()
        if now >= t0:
            ends.append(now)
        if now >= end:
            break
    inside = [t for t in ends if t <= end]
    if len(inside) >= 2:
        rate = (len(inside) - 1) / (inside[-1] - inside[0])
    else:  # a step longer than the window: the best we can say
        rate = len(ends) / max(ends[-1] - t0, 1e-9)
    return {"steps": len(inside), "rate": rate, "first": inside[0] if inside else None,
            "last": inside[-1] if inside else None, "overrun": ends[-1] - end}


def main():
    name = sys.argv[1]
    build, what, units, unit = PROGRAMS[name]
    torch.set_num_threads(max(1, min(2, len(os.sched_getaffinity(0)))))
    torch.backends.cudnn.benchmark = True
    step = build()
    started = time.time()
    times = []
    while time.time() - started < 4.0 or len(times) < 5:  # warm-up: autotuning, caches, clocks
        t = time.time()
        step()
        times.append(time.time() - t)
    times.sort()
    say({"ready": name, "pid": os.getpid(), "step_seconds": times[len(times) // 2], "what": what,
         "units_per_step": units, "unit": unit,
         "memory_bytes": torch.cuda.memory_reserved()})
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "run" and len(words) == 4:
            t0, seconds, warm = (float(w) for w in words[1:])
            result = run(step, t0, seconds, warm)
            result["name"] = name
            say(result)
        else:
            say({"name": name, "error": f"unknown command {line.strip()!r}"})


if __name__ == "__main__":
    main()
