#include "runtime/cubin_worker.h"

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "runtime/kernel_cache.h"
#include "runtime/module_image.h"
#include "runtime/ptx_compiler.h"

namespace loom::runtime {
namespace {

struct Task {
  std::string key;
  CompiledKernel kernel;
  int sm = 0;
  JitProfile jit;
};

// One thread, started at the first task: cubins are made one at a time, beside whatever the
// process does next, never several at once on its cores.
class Worker {
 public:
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (!thread_.joinable()) return;
    // A forked child has the object but not the thread: it leaves the parent's work alone.
    if (getpid() == owner_) thread_.join();  // what is queued is still made and stored
    else thread_.detach();
  }

  void push(Task t) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(t));
      if (!thread_.joinable()) {
        owner_ = getpid();
        thread_ = std::thread([this] { run(); });
      }
    }
    wake_.notify_all();
  }

  int finish() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
    return made_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      Task t = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      const bool made = attachCubin(t.kernel, t.sm, t.jit);
      if (made) diskCacheStore(t.key, t.kernel);
      lock.lock();
      made_ += made;
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  std::thread thread_;
  pid_t owner_ = 0;
  bool stop_ = false, busy_ = false;
  int made_ = 0;
};

Worker& worker() {
  static Worker w;  // destroyed at exit: joins after the queue is drained
  return w;
}

}  // namespace

void makeCubinLater(const std::string& key, const CompiledKernel& k, int sm, JitProfile jit) {
  // nvJitLink is opened here, before the worker exists: the statics it constructs when opened
  // are destroyed at exit after the worker, whose destructor waits for the cubin in flight.
  // Opened later (by the thread), they were destroyed first, under it: a crash at exit.
  // A kernel that has its cubin needs none (and no nvJitLink opened: ~ms on a disk-cache hit).
  if (cubinSettled(k, sm)) return;
  if (!cubinsEnabled() || !diskCacheEnabled() || !ptxCompilerAvailable()) return;
  Task t{key, k, sm, jit};
  t.kernel.llvm_ptx_ms = 0;
  worker().push(std::move(t));
}

int finishCubins() { return worker().finish(); }

}  // namespace loom::runtime
