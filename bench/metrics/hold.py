"""A program that holds N descriptors and M idle threads for S seconds, for
bench/metrics/cost.sh: the shapes that make the metrics sampler's reads
dearer (it counts /proc/self/fd; getrusage sums over threads).

    hold.py N_FDS N_THREADS SECONDS
"""
import os
import resource
import sys
import threading
import time

n_fds, n_threads, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if n_fds + 100 > soft:
    resource.setrlimit(resource.RLIMIT_NOFILE, (n_fds + 100, max(hard, n_fds + 100)))
keep = [os.open("/dev/null", os.O_RDONLY) for _ in range(n_fds)]
stop = threading.Event()
for _ in range(n_threads):
    threading.Thread(target=stop.wait, daemon=True).start()
time.sleep(seconds)
