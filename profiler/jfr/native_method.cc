#include "profiler/jfr/native_method.h"

#include <string_view>

namespace ctxprof {
namespace {

// Removes one qualifier a demangler writes after a parameter list from the end of `text`.
bool StripQualifier(std::string_view* text) {
  static constexpr std::string_view kQualifiers[] = {" const", " volatile", " &&", " &"};
  for (std::string_view qualifier : kQualifiers) {
    if (text->size() > qualifier.size() &&
        text->substr(text->size() - qualifier.size()) == qualifier) {
      text->remove_suffix(qualifier.size());
      return true;
    }
  }
  // GCC's clones: "f(int) [clone .isra.0]".
  const size_t clone = text->rfind(" [clone ");
  if (clone != std::string_view::npos && text->back() == ']') {
    text->remove_suffix(text->size() - clone);
    return true;
  }
  return false;
}

}  // namespace

void SplitNativeSymbol(const std::string& symbol, std::string* name, std::string* descriptor) {
  *name = symbol;
  *descriptor = kWholeSymbolDescriptor;
  std::string_view head = symbol;
  while (StripQualifier(&head)) {
  }
  if (head.empty() || head.back() != ')') return;
  // The '(' that opens the last parameter list: parentheses inside it balance.
  size_t open = head.size() - 1;
  int depth = 0;
  while (true) {
    if (head[open] == ')') depth++;
    if (head[open] == '(' && --depth == 0) break;
    if (open == 0) return;
    open--;
  }
  if (open == 0) return;  // "(anonymous namespace)": no name before the list
  const std::string_view parameters = head.substr(open + 1, head.size() - open - 2);
  // The JDK strips what precedes a '.' or '/' from a type and ends it at ';'.
  if (parameters.find_first_of(".;/") != std::string_view::npos) return;
  const std::string_view qualifiers = std::string_view(symbol).substr(head.size());
  *name = symbol.substr(0, open);
  *descriptor = parameters.empty() ? "()V" : "(L" + std::string(parameters) + ";)V";
  *descriptor += qualifiers;
}

bool HoldsParameters(const std::string& descriptor) {
  return descriptor.compare(0, 2, "(L") == 0 &&
         descriptor.find(";)V") != std::string::npos;  // parameters hold no ';'
}

std::string JoinNativeSymbol(const std::string& name, const std::string& descriptor) {
  const std::string_view text = descriptor;
  if (text.substr(0, 3) == "()V") return name + "()" + std::string(text.substr(3));
  if (!HoldsParameters(descriptor)) return name;
  const size_t end = text.find(";)V");
  return name + "(" + std::string(text.substr(2, end - 2)) + ")" +
         std::string(text.substr(end + 3));
}

}  // namespace ctxprof
