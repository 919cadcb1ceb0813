// A C++ program with a thread parked in a member function of a class in a
// namespace, a template, and a lambda, for the check that profiles show
// C++ names demangled. Knows nothing of cprof: it runs under LD_PRELOAD.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace shop {

template <typename T>
struct Queue {
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;
  __attribute__((noinline)) void wait_for_item() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [this] { return ready; });
  }
};

class Worker {
 public:
  __attribute__((noinline)) void run(Queue<int> &q) { q.wait_for_item(); }
};

}  // namespace shop

int main() {
  shop::Queue<int> q;
  shop::Worker w;
  std::thread t([&] { w.run(q); });
  std::printf("ready\n");
  std::fflush(stdout);
  t.join();  // never: nobody sets ready
}
