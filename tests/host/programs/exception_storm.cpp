// Threads that throw and catch exceptions in a loop while they fight over a
// std::mutex: issue 11's deadlock without a fork (a signal handler that
// interrupted free() unwound with a library whose internal mutex went
// through cprof's lock wrapper, whose slow path called calloc).
//
//   host_exception_storm [THREADS [ROUNDS]]
//
// Each of THREADS threads (default 4) runs ROUNDS rounds (default 20000):
// it throws an exception from a few frames down, allocating on the way,
// catches it, and adds to a total under a mutex every thread wants. Prints
// the totals, the same on every run, and exits 0.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::mutex contended;
static long total;

struct Failure : std::runtime_error {
  int depth;
  Failure(const std::string &what, int d) : std::runtime_error(what), depth(d) {}
};

__attribute__((noinline)) static int dive(int depth, int seed) {
  std::vector<int> on_the_way(static_cast<size_t>(8 + seed % 64), depth);
  if (depth == 0)
    throw Failure("bottom " + std::to_string(seed), static_cast<int>(on_the_way.size()));
  return dive(depth - 1, seed) + on_the_way[0];
}

static void worker(int id, int rounds) {
  long mine = 0;
  for (int i = 0; i < rounds; i++) {
    try {
      mine += dive(1 + (i + id) % 6, i);
    } catch (const Failure &f) {
      mine += f.depth;
    }
    if (i % 4 == 0) {
      std::lock_guard<std::mutex> hold(contended);
      total += mine;
      mine = 0;
      // Held a while, allocating, so that others wait for it.
      std::string s(static_cast<size_t>(32 + i % 200), 'x');
      total += static_cast<long>(s.size() & 1);
    }
  }
  std::lock_guard<std::mutex> hold(contended);
  total += mine;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (threads < 1 || threads > 64 || rounds < 1)
    return 2;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back(worker, t, rounds);
  for (auto &t : pool)
    t.join();
  std::printf("%d threads, %d rounds each: total %ld\n", threads, rounds, total);
  return 0;
}
