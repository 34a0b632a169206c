// libnamed_plugin.so: a library whose function HiddenHelperForDebugFiles is named only by its
// .symtab. BUILD.bazel strips it and keeps the symbols in a separate debug file, so the
// symbolizer's tests can check that the debug file, and only the right one, names it.

// Not exported (static): .dynsym does not have it.
static __attribute__((noinline)) int HiddenHelperForDebugFiles(int x) { return x * 7 + 3; }

extern "C" __attribute__((visibility("default"))) const void* NamedPluginHelperAddress() {
  return reinterpret_cast<const void*>(&HiddenHelperForDebugFiles);
}

extern "C" __attribute__((visibility("default"))) int NamedPluginCall(int x) {
  return HiddenHelperForDebugFiles(x);
}
