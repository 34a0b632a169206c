#include "jni/jvm_stubs.h"

#include <iterator>
#include <map>
#include <mutex>

namespace ctxprof {
namespace {

struct Stub {
  uint64_t end;
  std::string name;
};

std::mutex g_mutex;
// By start. Never destroyed: a JVMTI callback or the writer thread may still use it while the
// process runs its static destructors at exit.
std::map<uint64_t, Stub>* g_stubs = new std::map<uint64_t, Stub>();

}  // namespace

void JvmStubs::Add(const char* name, const void* address, jint length) {
  if (name == nullptr || address == nullptr || length <= 0) return;
  const auto start = reinterpret_cast<uint64_t>(address);
  std::lock_guard<std::mutex> lock(g_mutex);
  (*g_stubs)[start] = Stub{start + static_cast<uint64_t>(length), name};
}

bool JvmStubs::Lookup(uint64_t pc, std::string* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto after = g_stubs->upper_bound(pc);
  if (after == g_stubs->begin()) return false;
  const Stub& stub = std::prev(after)->second;
  if (pc >= stub.end) return false;
  *name = stub.name;
  return true;
}

}  // namespace ctxprof
