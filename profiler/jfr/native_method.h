// How a native frame's symbol is split into a JFR method name and descriptor, and joined back.
//
// The JDK's tools print a method as `class.name(parameters)`, the parameters decoded from the
// descriptor, so a demangled C++ symbol written whole ("PhaseChaitin::gather_lrg_masks(bool)"
// with descriptor "()L;") prints its parameter list twice: "...gather_lrg_masks(bool)()".
// A symbol that ends in a parameter list is therefore written as the name before the list and a
// descriptor the JDK decodes to that list: the list as one object type, "(Lbool;)V" (the JDK
// prints "(bool)"); "()V" for an empty list. Qualifiers after the list (" const", " &&",
// " [clone .cold]") follow the "V", where the JDK, which reads up to the last ')', ignores them.
// Any other symbol (C names, kernel symbols, parameters the JDK would misprint because they
// hold '.', '/' or ';') keeps its whole name and the descriptor "()L;", as async-profiler's
// recordings also have. Readers that show a native frame's method name alone (async-profiler's
// converters) then show the name without parameters, as async-profiler's own recordings do;
// JoinNativeSymbol gives back the whole symbol (tools/profile.cc).
//
// Pure functions of their arguments; thread-safe. Not for signal handlers (they allocate).
#ifndef CTXPROF_PROFILER_JFR_NATIVE_METHOD_H_
#define CTXPROF_PROFILER_JFR_NATIVE_METHOD_H_

#include <string>

namespace ctxprof {

// The descriptor of a native frame written with its whole symbol as name.
inline constexpr char kWholeSymbolDescriptor[] = "()L;";

// Splits `symbol` into the method name and descriptor to write (see above).
void SplitNativeSymbol(const std::string& symbol, std::string* name, std::string* descriptor);

// True for a descriptor SplitNativeSymbol wrote for a non-empty parameter list ("(Lbool;)V").
bool HoldsParameters(const std::string& descriptor);

// The symbol SplitNativeSymbol was given: `name` with the parameter list and qualifiers its
// descriptor holds, or `name` alone for any descriptor not of that form (e.g. "()L;").
std::string JoinNativeSymbol(const std::string& name, const std::string& descriptor);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_NATIVE_METHOD_H_
