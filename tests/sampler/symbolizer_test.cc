#include "profiler/recording/symbolizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace {

// Not exported: only .symtab knows it.
__attribute__((noinline)) static int StaticHelperForSymbolizer(int x) { return x * 3 + 1; }

}  // namespace

namespace ctxprof {
namespace demo {
__attribute__((noinline)) int MangledFunction(double value) { return static_cast<int>(value); }
}  // namespace demo

namespace {

TEST(SymbolizerTest, ResolvesStaticFunctionsFromSymtab) {
  Symbolizer symbolizer;
  const auto address = reinterpret_cast<uint64_t>(&StaticHelperForSymbolizer);
  EXPECT_EQ(symbolizer.Resolve(address + 2, false),
            "(anonymous namespace)::StaticHelperForSymbolizer(int)");
  EXPECT_EQ(StaticHelperForSymbolizer(1), 4);
}

TEST(SymbolizerTest, DemanglesCppNames) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(&demo::MangledFunction), false),
            "ctxprof::demo::MangledFunction(double)");
  EXPECT_EQ(Symbolizer::Demangle("_ZN3Foo3barEi"), "Foo::bar(int)");
  EXPECT_EQ(Symbolizer::Demangle("plain_c_name"), "plain_c_name");
}

TEST(SymbolizerTest, ResolvesSharedLibraryFunctions) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(&getppid), false), "getppid");
}

TEST(SymbolizerTest, ReturnAddressLooksUpTheCall) {
  Symbolizer symbolizer;
  // The first byte of a function as a return address belongs to the previous function.
  const auto address = reinterpret_cast<uint64_t>(&demo::MangledFunction);
  EXPECT_NE(symbolizer.Resolve(address, true), "ctxprof::demo::MangledFunction(double)");
}

TEST(SymbolizerTest, UnmappedAddressIsUnknown) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(16, false), "[unknown]");
}

}  // namespace
}  // namespace ctxprof
