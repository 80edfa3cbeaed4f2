# The Python side of a paired case (bench/paired.mjs): each line of stdin names a case and a count of
# runs; after one uncounted run, the median seconds of that many runs is printed, a line each. Shared
# by gguf_side.py, weights_side.py and refs_side.py.
import json, sys, time


def serve(known):
    for line in sys.stdin:
        name, repeats = line.split()
        fn = known[name]
        fn()
        times = []
        for _ in range(int(repeats)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        times.sort()
        print(json.dumps(times[len(times) // 2]), flush=True)
