// C++ allocation through new and delete, for the heap tests: the output
// (a checksum of what it built) must not change under cprof, and with
// --wait the blocks make_nodes keeps (about 4 MiB) must show in the heap
// profile under make_nodes, through operator new.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Node {
  char payload[4000];
  explicit Node(int i) { std::memset(payload, i & 0xff, sizeof payload); }
};

__attribute__((noinline)) static std::vector<std::unique_ptr<Node>> make_nodes(int n) {
  std::vector<std::unique_ptr<Node>> v;
  for (int i = 0; i < n; i++)
    v.push_back(std::make_unique<Node>(i));
  return v;
}

__attribute__((noinline)) static unsigned long build_map(int n) {
  std::map<int, std::string> m;
  for (int i = 0; i < n; i++)
    m[i * 7919 % n] = std::string(16 + i % 50, static_cast<char>('a' + i % 26));
  for (int i = 0; i < n; i += 2)
    m.erase(i);
  unsigned long sum = 0;
  for (const auto &kv : m)
    sum = sum * 31 + static_cast<unsigned long>(kv.first) + kv.second.size();
  return sum;
}

int main(int argc, char **argv) {
  unsigned long sum = build_map(200000);
  auto nodes = make_nodes(1024);
  auto *arr = new int[1 << 16]();
  for (int i = 0; i < 1 << 16; i++)
    arr[i] = i;
  sum += static_cast<unsigned long>(arr[12345]) + nodes.size();
  delete[] arr;
  std::printf("checksum %lu\n", sum);
  if (argc > 1 && std::strcmp(argv[1], "--wait") == 0) {
    std::puts("ready");
    std::fflush(stdout);
    for (;;)
      pause();
  }
  return 0;
}
