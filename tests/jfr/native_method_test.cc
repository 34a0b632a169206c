// SplitNativeSymbol, JoinNativeSymbol and HoldsParameters (profiler/jfr/native_method.h): which
// symbols are split, the descriptors the JDK decodes to their parameter lists, and the round trip.
#include "profiler/jfr/native_method.h"

#include <gtest/gtest.h>

#include <string>

namespace ctxprof {
namespace {

void ExpectSplit(const std::string& symbol, const std::string& name,
                 const std::string& descriptor) {
  std::string got_name, got_descriptor;
  SplitNativeSymbol(symbol, &got_name, &got_descriptor);
  EXPECT_EQ(got_name, name) << symbol;
  EXPECT_EQ(got_descriptor, descriptor) << symbol;
  EXPECT_EQ(JoinNativeSymbol(got_name, got_descriptor), symbol);
}

TEST(NativeMethodTest, ParameterListsGoToTheDescriptor) {
  ExpectSplit("PhaseChaitin::gather_lrg_masks(bool)", "PhaseChaitin::gather_lrg_masks",
              "(Lbool;)V");
  ExpectSplit("JavaThread::run()", "JavaThread::run", "()V");
  ExpectSplit("f(int, char const*)", "f", "(Lint, char const*;)V");
  ExpectSplit("outer(void (*)(int))", "outer", "(Lvoid (*)(int);)V");
  ExpectSplit("Foo::operator()(int)", "Foo::operator()", "(Lint;)V");
  ExpectSplit("(anonymous namespace)::helper(char const*)", "(anonymous namespace)::helper",
              "(Lchar const*;)V");
}

TEST(NativeMethodTest, QualifiersFollowTheReturnType) {
  ExpectSplit("Symbol::as_C_string() const", "Symbol::as_C_string", "()V const");
  ExpectSplit("A::get(int) const &&", "A::get", "(Lint;)V const &&");
  ExpectSplit("g(long) [clone .isra.0]", "g", "(Llong;)V [clone .isra.0]");
  ExpectSplit("h() const [clone .cold]", "h", "()V const [clone .cold]");
}

TEST(NativeMethodTest, OtherSymbolsKeepTheirWholeName) {
  for (const std::string symbol :
       {"read", "[unknown]", "libfoo.so+0x1234", "(anonymous namespace)", "{lambda(int)#1}::_FUN",
        "f(a.b)", "f(a/b)", "f(a;b)", "f(int", "x) const", ""}) {
    ExpectSplit(symbol, symbol, kWholeSymbolDescriptor);
  }
}

TEST(NativeMethodTest, JoinLeavesOtherDescriptorsAlone) {
  EXPECT_EQ(JoinNativeSymbol("read", "()L;"), "read");  // async-profiler's and ours
  EXPECT_EQ(JoinNativeSymbol("f", ""), "f");
  EXPECT_EQ(JoinNativeSymbol("f", "(I)V"), "f");
  EXPECT_EQ(JoinNativeSymbol("f", "(Lint)V"), "f");  // no ';'
}

// What the fold of a recording may drop where no overload needs it (jfr_copy.h): a non-empty
// parameter list only, not "()V" (an empty list) nor a whole symbol's descriptor.
TEST(NativeMethodTest, HoldsParametersOnlyForNonEmptyLists) {
  std::string name, descriptor;
  SplitNativeSymbol("PhaseChaitin::gather_lrg_masks(bool)", &name, &descriptor);
  EXPECT_TRUE(HoldsParameters(descriptor));
  SplitNativeSymbol("outer(void (*)(int)) [clone .isra.0]", &name, &descriptor);
  EXPECT_TRUE(HoldsParameters(descriptor));
  SplitNativeSymbol("Symbol::as_C_string() const", &name, &descriptor);
  EXPECT_FALSE(HoldsParameters(descriptor));
  EXPECT_FALSE(HoldsParameters(kWholeSymbolDescriptor));
  EXPECT_FALSE(HoldsParameters("(Lint)V"));
}

}  // namespace
}  // namespace ctxprof
