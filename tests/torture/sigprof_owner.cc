// LD_PRELOAD'ed by fault_test.sh's "foreign SIGPROF" case: like another profiler or an APM agent
// loaded first, it owns SIGPROF before libctxprof starts.
#include <signal.h>

namespace {

void IgnoreSigprof(int) {}

__attribute__((constructor)) void OwnSigprof() {
  struct sigaction action = {};
  action.sa_handler = IgnoreSigprof;
  sigemptyset(&action.sa_mask);
  sigaction(SIGPROF, &action, nullptr);
}

}  // namespace
