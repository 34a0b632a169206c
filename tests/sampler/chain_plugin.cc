// libchain_plugin.so: a library the DWARF walker's tests dlopen after the unwind tables were
// built. Compiled without frame pointers (BUILD.bazel): only its unwind tables find its callers.
#include <cstdint>

// Calls at_leaf(argument) once (native_chain.h's AtLeaf).
extern "C" __attribute__((visibility("default"), noipa)) uint64_t PluginCall(bool (*at_leaf)(void*),
                                                                             void* argument) {
  volatile uint64_t scratch[3] = {1, 2, 3};
  const bool again = at_leaf(argument);
  return scratch[again ? 1 : 2] + 1;
}
