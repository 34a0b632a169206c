#include "profiler/sampler/thread_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace ctxprof {

ThreadRegistry::~ThreadRegistry() {
  RemoveAll();
  if (task_dir_ >= 0) close(task_dir_);
}

void ThreadRegistry::Exclude(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  excluded_.insert(tid);
  RemoveLocked(tid);
}

void ThreadRegistry::AddLocked(pid_t tid) {
  if (excluded_.count(tid) != 0 || !known_.insert(tid).second) return;
  ++threads_seen_;
  for (SamplingEngine* engine : engines_) engine->AddThread(tid);
}

void ThreadRegistry::RemoveLocked(pid_t tid) {
  if (known_.erase(tid) == 0) return;
  for (SamplingEngine* engine : engines_) engine->RemoveThread(tid);
}

void ThreadRegistry::Rescan() {
  std::unordered_set<pid_t> live;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return;  // e.g. /proc not mounted: keep what we have
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    live.insert(static_cast<pid_t>(atoi(entry->d_name)));
  }
  closedir(tasks);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pid_t> gone;
  for (pid_t tid : known_) {
    if (live.count(tid) == 0) gone.push_back(tid);
  }
  for (pid_t tid : gone) RemoveLocked(tid);
  for (pid_t tid : live) AddLocked(tid);
}

void ThreadRegistry::RescanIfChanged() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < discovery_.check) return;
  last_check_ = now;
  if (task_dir_ < 0) task_dir_ = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat info;
  const bool counted =
      (task_dir_ >= 0 ? fstat(task_dir_, &info) : stat("/proc/self/task", &info)) == 0;
  if (counted && info.st_nlink == last_link_count_ &&
      now - last_full_rescan_ < discovery_.full_rescan) {
    return;
  }
  last_link_count_ = counted ? info.st_nlink : 0;
  last_full_rescan_ = now;
  Rescan();
}

void ThreadRegistry::OnThreadStart(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  AddLocked(tid);
}

void ThreadRegistry::OnThreadEnd(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  RemoveLocked(tid);
}

void ThreadRegistry::RemoveAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pid_t> all(known_.begin(), known_.end());
  for (pid_t tid : all) RemoveLocked(tid);
}

size_t ThreadRegistry::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return known_.size();
}

uint64_t ThreadRegistry::threads_seen() {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_seen_;
}

}  // namespace ctxprof
