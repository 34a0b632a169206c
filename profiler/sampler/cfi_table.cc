#include "profiler/sampler/cfi_table.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

// DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, the high one how the value
// is applied.
constexpr uint8_t kEncodingOmit = 0xff;
constexpr uint8_t kFormatAbsolute = 0x00;
constexpr uint8_t kFormatUleb128 = 0x01;
constexpr uint8_t kFormatUdata2 = 0x02;
constexpr uint8_t kFormatUdata4 = 0x03;
constexpr uint8_t kFormatUdata8 = 0x04;
constexpr uint8_t kFormatSleb128 = 0x09;
constexpr uint8_t kFormatSdata2 = 0x0a;
constexpr uint8_t kFormatSdata4 = 0x0b;
constexpr uint8_t kFormatSdata8 = 0x0c;
constexpr uint8_t kApplyPcRelative = 0x10;
constexpr uint8_t kApplyDataRelative = 0x30;
constexpr uint8_t kIndirect = 0x80;

// Call frame instructions (DW_CFA_*). The top two bits hold the three compact ones.
enum CfaOp : uint8_t {
  kAdvanceLocCompact = 0x40,
  kOffsetCompact = 0x80,
  kRestoreCompact = 0xc0,
  kNop = 0x00,
  kSetLoc = 0x01,
  kAdvanceLoc1 = 0x02,
  kAdvanceLoc2 = 0x03,
  kAdvanceLoc4 = 0x04,
  kOffsetExtended = 0x05,
  kRestoreExtended = 0x06,
  kUndefined = 0x07,
  kSameValue = 0x08,
  kRegister = 0x09,
  kRememberState = 0x0a,
  kRestoreState = 0x0b,
  kDefCfa = 0x0c,
  kDefCfaRegister = 0x0d,
  kDefCfaOffset = 0x0e,
  kDefCfaExpression = 0x0f,
  kExpression = 0x10,
  kOffsetExtendedSf = 0x11,
  kDefCfaSf = 0x12,
  kDefCfaOffsetSf = 0x13,
  kValOffset = 0x14,
  kValOffsetSf = 0x15,
  kValExpression = 0x16,
  kGnuWindowSave = 0x2d,  // AArch64: DW_CFA_AARCH64_negate_ra_state (pointer authentication)
  kGnuArgsSize = 0x2e,
  kGnuNegativeOffsetExtended = 0x2f,
};

// The largest code span (first FDE to the end of the last) a table indexes.
constexpr uint32_t kMaxCodeSpan = 512u << 20;

// Nesting of DW_CFA_remember_state within one FDE; compilers use one or two levels.
constexpr size_t kMaxRememberedStates = 16;

// Reads little-endian values from [position, end): memory the caller has checked is readable.
// A read past the end fails: ok() turns false and every later read returns 0.
class ByteCursor {
 public:
  ByteCursor(uintptr_t position, uintptr_t end) : position_(position), end_(end) {}

  bool ok() const { return ok_; }
  uintptr_t position() const { return position_; }
  bool at_end() const { return position_ >= end_; }

  template <typename T>
  T Fixed() {
    T value{};
    if (!ok_ || end_ - position_ < sizeof(T)) {
      ok_ = false;
      return value;
    }
    memcpy(&value, reinterpret_cast<const void*>(position_), sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  uint64_t Uleb128() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t byte = Fixed<uint8_t>();
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ok_ = false;
    return 0;
  }

  int64_t Sleb128() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t byte = Fixed<uint8_t>();
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        if (shift + 7 < 64 && (byte & 0x40) != 0) value |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(value);
      }
    }
    ok_ = false;
    return 0;
  }

  void Skip(uint64_t bytes) {
    if (!ok_ || end_ - position_ < bytes) {
      ok_ = false;
      return;
    }
    position_ += bytes;
  }

  // A value in one of the DW_EH_PE encodings. `data_base` is what kApplyDataRelative adds (the
  // start of .eh_frame_hdr). Indirect values are not supported (the loader would have to have
  // relocated the slot; compilers never emit them for code addresses).
  uintptr_t Encoded(uint8_t encoding, uintptr_t data_base) {
    const uintptr_t field = position_;
    uint64_t value = 0;
    switch (encoding & 0x0f) {
      case kFormatAbsolute:
      case kFormatUdata8:
        value = Fixed<uint64_t>();
        break;
      case kFormatUleb128:
        value = Uleb128();
        break;
      case kFormatUdata2:
        value = Fixed<uint16_t>();
        break;
      case kFormatUdata4:
        value = Fixed<uint32_t>();
        break;
      case kFormatSleb128:
        value = static_cast<uint64_t>(Sleb128());
        break;
      case kFormatSdata2:
        value = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int16_t>()));
        break;
      case kFormatSdata4:
        value = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int32_t>()));
        break;
      case kFormatSdata8:
        value = Fixed<uint64_t>();
        break;
      default:
        ok_ = false;
        return 0;
    }
    if ((encoding & kIndirect) != 0) {
      ok_ = false;
      return 0;
    }
    switch (encoding & 0x70) {
      case 0x00:
        break;
      case kApplyPcRelative:
        value += field;
        break;
      case kApplyDataRelative:
        value += data_base;
        break;
      default:
        ok_ = false;
        return 0;
    }
    return static_cast<uintptr_t>(value);
  }

 private:
  uintptr_t position_;
  uintptr_t end_;
  bool ok_ = true;
};

// The readable memory of one object: no read leaves it.
class ObjectMemory {
 public:
  explicit ObjectMemory(const std::vector<AddressRange>& readable) : readable_(readable) {}

  // The end of the readable range holding `address`, or 0 when none does.
  uintptr_t ReadableEnd(uintptr_t address) const {
    for (const AddressRange& range : readable_) {
      if (address >= range.start && address < range.end) return range.end;
    }
    return 0;
  }
  bool Readable(uintptr_t address, size_t size) const {
    const uintptr_t end = ReadableEnd(address);
    return end != 0 && end - address >= size;
  }

 private:
  const std::vector<AddressRange>& readable_;
};

// One .eh_frame record (CIE or FDE): its body [body, end), after the length field.
struct Record {
  uintptr_t body;
  uintptr_t end;
};

// Reads the record that starts at `address`. False when it is out of bounds or a terminator.
bool ReadRecord(const ObjectMemory& memory, uintptr_t address, Record* record) {
  const uintptr_t limit = memory.ReadableEnd(address);
  if (limit == 0) return false;
  ByteCursor cursor(address, limit);
  uint64_t length = cursor.Fixed<uint32_t>();
  if (length == 0xffffffffu) length = cursor.Fixed<uint64_t>();
  if (!cursor.ok() || length == 0 || length > limit - cursor.position()) return false;
  *record = {cursor.position(), cursor.position() + static_cast<uintptr_t>(length)};
  return true;
}

struct Cie {
  uint64_t code_alignment = 1;
  int64_t data_alignment = 1;
  uint64_t return_address_register = 0;
  uint8_t fde_encoding = kFormatAbsolute;
  bool augmentation_data = false;  // 'z': FDEs carry an augmentation length
  bool signal_frame = false;       // 'S'
  uintptr_t instructions = 0;
  uintptr_t end = 0;
};

bool ParseCie(const ObjectMemory& memory, uintptr_t address, Cie* cie) {
  Record record;
  if (!ReadRecord(memory, address, &record)) return false;
  ByteCursor cursor(record.body, record.end);
  if (cursor.Fixed<uint32_t>() != 0) return false;  // a CIE's id in .eh_frame
  const uint8_t version = cursor.Fixed<uint8_t>();
  if (version != 1 && version != 3) return false;
  char augmentation[8];
  size_t length = 0;
  for (char c = static_cast<char>(cursor.Fixed<uint8_t>()); c != 0 && cursor.ok();
       c = static_cast<char>(cursor.Fixed<uint8_t>())) {
    if (length + 1 == sizeof(augmentation)) return false;
    augmentation[length++] = c;
  }
  augmentation[length] = 0;
  cie->code_alignment = cursor.Uleb128();
  cie->data_alignment = cursor.Sleb128();
  cie->return_address_register = version == 1 ? cursor.Fixed<uint8_t>() : cursor.Uleb128();
  if (length > 0 && augmentation[0] != 'z') return false;  // "eh" and other legacy forms
  uintptr_t instructions_at = 0;
  if (length > 0) {
    cie->augmentation_data = true;
    const uint64_t data_length = cursor.Uleb128();
    instructions_at = cursor.position() + data_length;
    for (size_t i = 1; i < length && cursor.ok(); ++i) {
      switch (augmentation[i]) {
        case 'R':
          cie->fde_encoding = cursor.Fixed<uint8_t>();
          break;
        case 'L':
          cursor.Fixed<uint8_t>();  // LSDA encoding: exception handling only
          break;
        case 'P':
          cursor.Encoded(cursor.Fixed<uint8_t>() & 0x7f, 0);  // personality routine
          break;
        case 'S':
          cie->signal_frame = true;
          break;
        case 'B':  // AArch64 branch target identification
        case 'G':  // AArch64 memory tagging
          break;
        default:
          return false;
      }
    }
  } else {
    instructions_at = cursor.position();
  }
  if (!cursor.ok() || instructions_at > record.end) return false;
  cie->instructions = instructions_at;
  cie->end = record.end;
  return true;
}

// What the CFI program says at one location, for the registers a walk needs.
struct RegisterRule {
  enum Kind : uint8_t { kSame, kUndefined, kAtCfaOffset, kOther };
  Kind kind = kSame;
  int64_t offset = 0;
};

struct CfiState {
  enum CfaKind : uint8_t { kRegisterPlusOffset, kPltExpression, kOtherExpression };
  CfaKind cfa_kind = kRegisterPlusOffset;
  uint64_t cfa_register = 0;
  int64_t cfa_offset = 0;
  int plt_threshold = 0;
  RegisterRule fp;
  RegisterRule return_address;
};

// Recognises glibc's and binutils' PLT stub CFA expression:
//   DW_OP_breg<sp> off; DW_OP_breg<ra> 0; DW_OP_lit15; DW_OP_and; DW_OP_lit<N>; DW_OP_ge;
//   DW_OP_lit3; DW_OP_shl; DW_OP_plus
// i.e. CFA = sp + off + ((pc & 15) >= N ? 8 : 0). Sets the state's CFA when it matches.
bool MatchPltExpression(ByteCursor expression, CfiState* state) {
  constexpr uint8_t kBreg0 = 0x70, kLit0 = 0x30;
  if (expression.Fixed<uint8_t>() != kBreg0 + MachineContext::kDwarfSp) return false;
  const int64_t offset = expression.Sleb128();
  if (expression.Fixed<uint8_t>() != kBreg0 + MachineContext::kDwarfReturnAddress ||
      expression.Sleb128() != 0 || expression.Fixed<uint8_t>() != kLit0 + 15 ||
      expression.Fixed<uint8_t>() != 0x1a /* and */) {
    return false;
  }
  const uint8_t literal = expression.Fixed<uint8_t>();
  if (literal < kLit0 || literal > kLit0 + 15 || expression.Fixed<uint8_t>() != 0x2a /* ge */ ||
      expression.Fixed<uint8_t>() != kLit0 + 3 || expression.Fixed<uint8_t>() != 0x24 /* shl */ ||
      expression.Fixed<uint8_t>() != 0x22 /* plus */ || !expression.ok() || !expression.at_end()) {
    return false;
  }
  state->cfa_kind = CfiState::kPltExpression;
  state->cfa_offset = offset;
  state->plt_threshold = literal - kLit0;
  return true;
}

CfiRow RowOf(const CfiState& state) {
  CfiRow row{};
  row.rule = CfaRule::kUnsupported;
  const RegisterRule& ra = state.return_address;
  if (ra.kind == RegisterRule::kUndefined) {
    row.rule = CfaRule::kOutermost;
    return row;
  }
  if (ra.kind != RegisterRule::kAtCfaOffset || ra.offset < INT8_MIN || ra.offset > INT8_MAX) {
    return row;
  }
  if (state.cfa_offset < INT32_MIN || state.cfa_offset > INT32_MAX) return row;
  switch (state.fp.kind) {
    case RegisterRule::kSame:
      row.fp_offset = CfiRow::kFpUnchanged;
      break;
    case RegisterRule::kAtCfaOffset:
      if (state.fp.offset == 0 || state.fp.offset <= INT16_MIN || state.fp.offset > INT16_MAX) {
        row.fp_offset = CfiRow::kFpLost;
      } else {
        row.fp_offset = static_cast<int16_t>(state.fp.offset);
      }
      break;
    case RegisterRule::kUndefined:
    case RegisterRule::kOther:
      row.fp_offset = CfiRow::kFpLost;
      break;
  }
  row.return_address_offset = static_cast<int8_t>(ra.offset);
  row.cfa_offset = static_cast<int32_t>(state.cfa_offset);
  switch (state.cfa_kind) {
    case CfiState::kRegisterPlusOffset:
      if (state.cfa_register == MachineContext::kDwarfSp) {
        row.rule = CfaRule::kSp;
      } else if (state.cfa_register == MachineContext::kDwarfFp) {
        row.rule = CfaRule::kFp;
      }
      break;
    case CfiState::kPltExpression:
      row.rule = CfaRule::kPltStub;
      row.fp_offset = static_cast<int16_t>(state.plt_threshold);
      break;
    case CfiState::kOtherExpression:
      break;
  }
  return row;
}

bool SameRule(const CfiRow& a, const CfiRow& b) {
  return a.rule == b.rule && a.return_address_offset == b.return_address_offset &&
         a.fp_offset == b.fp_offset && a.cfa_offset == b.cfa_offset;
}

// Compiles FDEs into rows, appended in pc order.
class RowWriter {
 public:
  RowWriter(uintptr_t bias, std::vector<CfiRow>* rows) : bias_(bias), rows_(rows) {}

  // The pc range of the next FDE; false (the FDE is skipped) when it overlaps the previous one
  // or does not fit the table's 32-bit offsets.
  bool BeginFunction(uintptr_t start, uintptr_t end) {
    if (start < bias_ || end <= start || end - bias_ > std::numeric_limits<uint32_t>::max()) {
      return false;
    }
    const uint32_t first = static_cast<uint32_t>(start - bias_);
    if (!rows_->empty() && first < rows_->back().pc) return false;
    // The gap marker the previous function left at its end is replaced when this one starts
    // right there.
    if (!rows_->empty() && rows_->back().pc == first && rows_->back().rule == CfaRule::kNoInfo) {
      rows_->pop_back();
    }
    function_start_ = rows_->size();
    end_ = end;
    return true;
  }

  // The rule from `pc` on (until the next Set or the function's end).
  void Set(uintptr_t pc, const CfiRow& rule) {
    if (pc >= end_) return;
    CfiRow row = rule;
    row.pc = static_cast<uint32_t>(pc - bias_);
    if (rows_->size() > function_start_ && rows_->back().pc == row.pc) rows_->pop_back();
    if (!rows_->empty() && SameRule(rows_->back(), row)) return;
    rows_->push_back(row);
  }

  // Drops what the current function emitted (its CFI turned out malformed) and covers its
  // range with one row of `rule`.
  void ReplaceFunction(uintptr_t start, CfaRule rule) {
    rows_->resize(function_start_);
    CfiRow row{};
    row.rule = rule;
    Set(start, row);
  }

  // Marks the end of the function: up to the next function's start, no FDE covers a pc.
  void EndFunction() {
    CfiRow gap{};
    gap.pc = static_cast<uint32_t>(end_ - bias_);
    gap.rule = CfaRule::kNoInfo;
    rows_->push_back(gap);
  }

 private:
  const uintptr_t bias_;
  std::vector<CfiRow>* const rows_;
  size_t function_start_ = 0;
  uintptr_t end_ = 0;
};

// Runs a CFI program over `state`. With a writer, location advances emit rows (an FDE); without
// one (a CIE's initial instructions) they are errors. `initial` is the CIE's state, for
// DW_CFA_restore.
bool Execute(ByteCursor program, const Cie& cie, const CfiState& initial, uintptr_t location,
             uint8_t fde_encoding, CfiState* state, RowWriter* writer) {
  std::vector<CfiState> remembered;
  auto rule_of = [&](uint64_t reg) -> RegisterRule* {
    if (reg == MachineContext::kDwarfFp) return &state->fp;
    if (reg == cie.return_address_register) return &state->return_address;
    return nullptr;
  };
  auto initial_rule_of = [&](uint64_t reg) -> RegisterRule {
    return reg == MachineContext::kDwarfFp ? initial.fp : initial.return_address;
  };
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (RegisterRule* rule = rule_of(reg)) *rule = {RegisterRule::kAtCfaOffset, offset};
  };
  auto set_kind = [&](uint64_t reg, RegisterRule::Kind kind) {
    if (RegisterRule* rule = rule_of(reg)) *rule = {kind, 0};
  };
  // Factored operands of a corrupt program may overflow: the program is then rejected.
  bool overflow = false;
  auto factored = [&](int64_t value) {
    int64_t result = 0;
    overflow |= __builtin_mul_overflow(value, cie.data_alignment, &result);
    return result;
  };
  auto negated = [&](int64_t value) {
    int64_t result = 0;
    overflow |= __builtin_sub_overflow(int64_t{0}, value, &result);
    return result;
  };
  auto advance = [&](uint64_t delta) {
    if (writer == nullptr) return false;
    writer->Set(location, RowOf(*state));
    location += static_cast<uintptr_t>(delta * cie.code_alignment);
    return true;
  };
  while (!program.at_end() && program.ok()) {
    const uint8_t op = program.Fixed<uint8_t>();
    const uint8_t operand = op & 0x3f;
    switch (op & 0xc0) {
      case kAdvanceLocCompact:
        if (!advance(operand)) return false;
        continue;
      case kOffsetCompact:
        set_offset(operand, factored(static_cast<int64_t>(program.Uleb128())));
        continue;
      case kRestoreCompact:
        if (RegisterRule* rule = rule_of(operand)) *rule = initial_rule_of(operand);
        continue;
      default:
        break;
    }
    switch (op) {
      case kNop:
        break;
      case kSetLoc: {
        const uintptr_t target = program.Encoded(fde_encoding, 0);
        if (writer == nullptr || target < location) return false;
        writer->Set(location, RowOf(*state));
        location = target;
        break;
      }
      case kAdvanceLoc1:
        if (!advance(program.Fixed<uint8_t>())) return false;
        break;
      case kAdvanceLoc2:
        if (!advance(program.Fixed<uint16_t>())) return false;
        break;
      case kAdvanceLoc4:
        if (!advance(program.Fixed<uint32_t>())) return false;
        break;
      case kOffsetExtended: {
        const uint64_t reg = program.Uleb128();
        set_offset(reg, factored(static_cast<int64_t>(program.Uleb128())));
        break;
      }
      case kOffsetExtendedSf: {
        const uint64_t reg = program.Uleb128();
        set_offset(reg, factored(program.Sleb128()));
        break;
      }
      case kGnuNegativeOffsetExtended: {
        const uint64_t reg = program.Uleb128();
        set_offset(reg, negated(factored(static_cast<int64_t>(program.Uleb128()))));
        break;
      }
      case kRestoreExtended: {
        const uint64_t reg = program.Uleb128();
        if (RegisterRule* rule = rule_of(reg)) *rule = initial_rule_of(reg);
        break;
      }
      case kUndefined:
        set_kind(program.Uleb128(), RegisterRule::kUndefined);
        break;
      case kSameValue:
        set_kind(program.Uleb128(), RegisterRule::kSame);
        break;
      case kRegister:
      case kValOffset: {
        const uint64_t reg = program.Uleb128();
        program.Uleb128();
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case kValOffsetSf: {
        const uint64_t reg = program.Uleb128();
        program.Sleb128();
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case kExpression:
      case kValExpression: {
        const uint64_t reg = program.Uleb128();
        program.Skip(program.Uleb128());
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case kRememberState:
        if (remembered.size() == kMaxRememberedStates) return false;
        remembered.push_back(*state);
        break;
      case kRestoreState:
        if (remembered.empty()) return false;
        *state = remembered.back();
        remembered.pop_back();
        break;
      case kDefCfa:
        state->cfa_kind = CfiState::kRegisterPlusOffset;
        state->cfa_register = program.Uleb128();
        state->cfa_offset = static_cast<int64_t>(program.Uleb128());
        break;
      case kDefCfaSf:
        state->cfa_kind = CfiState::kRegisterPlusOffset;
        state->cfa_register = program.Uleb128();
        state->cfa_offset = factored(program.Sleb128());
        break;
      case kDefCfaRegister:
        state->cfa_register = program.Uleb128();
        if (state->cfa_kind != CfiState::kRegisterPlusOffset) return false;
        break;
      case kDefCfaOffset:
        state->cfa_offset = static_cast<int64_t>(program.Uleb128());
        if (state->cfa_kind != CfiState::kRegisterPlusOffset) return false;
        break;
      case kDefCfaOffsetSf:
        state->cfa_offset = factored(program.Sleb128());
        if (state->cfa_kind != CfiState::kRegisterPlusOffset) return false;
        break;
      case kDefCfaExpression: {
        const uint64_t length = program.Uleb128();
        const uintptr_t expression = program.position();
        program.Skip(length);
        if (!program.ok()) return false;
        if (!MatchPltExpression(ByteCursor(expression, expression + length), state)) {
          state->cfa_kind = CfiState::kOtherExpression;
        }
        break;
      }
      case kGnuArgsSize:
        program.Uleb128();
        break;
      case kGnuWindowSave:
        // AArch64 return address signing: the saved return address would need its signature
        // stripped, which this walker does not do.
        state->return_address = {RegisterRule::kOther, 0};
        break;
      default:
        return false;  // an opcode this compiler does not know: its operands cannot be skipped
    }
  }
  if (!program.ok() || overflow) return false;
  if (writer != nullptr) writer->Set(location, RowOf(*state));
  return true;
}

// True when the code of the FDE starting at `start` is the signal return trampoline. glibc
// starts the trampoline's FDE one byte early (a nop), so that unwinders looking up a return
// address minus one still find it.
bool IsSigreturnTrampoline(const ObjectMemory& memory, uintptr_t start) {
  for (uintptr_t code = start; code <= start + 1; ++code) {
    if (memory.Readable(code, MachineContext::kSigreturnSize) &&
        MachineContext::IsSigreturnTrampoline(reinterpret_cast<const unsigned char*>(code))) {
      return true;
    }
  }
  return false;
}

// Compiles the FDE at `address` into rows. False when the FDE could not be located at all (its
// range is then unknown and it is left out: a pc there finds the previous function's gap row).
bool CompileFde(const ObjectMemory& memory, uintptr_t address,
                std::unordered_map<uintptr_t, Cie>* cies, RowWriter* writer) {
  Record record;
  if (!ReadRecord(memory, address, &record)) return false;
  ByteCursor cursor(record.body, record.end);
  const uintptr_t cie_pointer_field = cursor.position();
  const uint32_t cie_pointer = cursor.Fixed<uint32_t>();
  if (!cursor.ok() || cie_pointer == 0 || cie_pointer > cie_pointer_field) return false;
  const uintptr_t cie_address = cie_pointer_field - cie_pointer;
  auto found = cies->find(cie_address);
  if (found == cies->end()) {
    Cie cie;
    if (!ParseCie(memory, cie_address, &cie)) return false;
    found = cies->emplace(cie_address, cie).first;
  }
  const Cie& cie = found->second;
  const uintptr_t start = cursor.Encoded(cie.fde_encoding, 0);
  const uintptr_t length = cursor.Encoded(cie.fde_encoding & 0x0f, 0);
  if (cie.augmentation_data) cursor.Skip(cursor.Uleb128());
  if (!cursor.ok() || !writer->BeginFunction(start, start + length)) return false;

  if (cie.signal_frame && IsSigreturnTrampoline(memory, start)) {
    writer->ReplaceFunction(start, CfaRule::kSignalFrame);
  } else {
    CfiState initial;
    initial.cfa_register = MachineContext::kDwarfSp;
    if (!Execute(ByteCursor(cie.instructions, cie.end), cie, initial, start, cie.fde_encoding,
                 &initial, nullptr)) {
      writer->ReplaceFunction(start, CfaRule::kUnsupported);
    } else {
      CfiState state = initial;
      if (!Execute(cursor, cie, initial, start, cie.fde_encoding, &state, writer)) {
        writer->ReplaceFunction(start, CfaRule::kUnsupported);
      }
    }
  }
  writer->EndFunction();
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<CfiTable>> CfiTable::Build(uintptr_t bias, uintptr_t eh_frame_hdr,
                                                    const std::vector<AddressRange>& readable) {
  const ObjectMemory memory(readable);
  const uintptr_t limit = memory.ReadableEnd(eh_frame_hdr);
  if (limit == 0) {
    return Status::InvalidArgument(".eh_frame_hdr is not in a readable segment");
  }
  ByteCursor header(eh_frame_hdr, limit);
  const uint8_t version = header.Fixed<uint8_t>();
  const uint8_t eh_frame_encoding = header.Fixed<uint8_t>();
  const uint8_t count_encoding = header.Fixed<uint8_t>();
  const uint8_t table_encoding = header.Fixed<uint8_t>();
  if (!header.ok() || version != 1) {
    return Status::InvalidArgument(".eh_frame_hdr version " + std::to_string(version) +
                                   " (expected 1)");
  }
  if (eh_frame_encoding == kEncodingOmit || count_encoding == kEncodingOmit ||
      table_encoding == kEncodingOmit) {
    return Status::InvalidArgument(".eh_frame_hdr has no binary search table");
  }
  header.Encoded(eh_frame_encoding, eh_frame_hdr);
  const uintptr_t count = header.Encoded(count_encoding, eh_frame_hdr);
  if (!header.ok()) {
    return Status::InvalidArgument(".eh_frame_hdr: unsupported encoding or truncated header");
  }
  std::unique_ptr<CfiTable> table(new CfiTable(bias));
  RowWriter writer(bias, &table->rows_);
  std::unordered_map<uintptr_t, Cie> cies;
  for (uintptr_t i = 0; i < count; ++i) {
    header.Encoded(table_encoding, eh_frame_hdr);  // the function's start, also in its FDE
    const uintptr_t fde = header.Encoded(table_encoding, eh_frame_hdr);
    if (!header.ok()) {
      return Status::InvalidArgument(".eh_frame_hdr: the search table ends after " +
                                     std::to_string(i) + " of " + std::to_string(count) +
                                     " entries");
    }
    CompileFde(memory, fde, &cies, &writer);
  }
  if (table->rows_.empty()) {
    return Status::InvalidArgument("no FDE could be read");
  }
  // The index costs 4 bytes per 128 bytes of the span its FDEs cover: a corrupt FDE claiming
  // gigabytes must not cost a huge allocation. Real objects stay far below (libjvm.so: 14 MiB).
  if (table->rows_.back().pc - table->rows_.front().pc > kMaxCodeSpan) {
    return Status::InvalidArgument("its FDEs span more than " + std::to_string(kMaxCodeSpan >> 20) +
                                   " MiB of code");
  }
  table->rows_.shrink_to_fit();
  table->BuildIndex();
  return std::move(table);
}

CfiLookup CfiTable::lookup() const {
  return {bias_, bias_ + rows_.front().pc, rows_.data(), bucket_first_row_.data(),
          bucket_first_row_.size() - 1};
}

void CfiTable::BuildIndex() {
  constexpr int kBucketShift = CfiLookup::kBucketShift;
  const uint32_t first = rows_.front().pc;
  const size_t buckets = ((rows_.back().pc - first) >> kBucketShift) + 1;
  bucket_first_row_.resize(buckets + 1);
  size_t row = 0;
  for (size_t bucket = 0; bucket < buckets; ++bucket) {
    const uint64_t start = first + (uint64_t{bucket} << kBucketShift);
    while (row + 1 < rows_.size() && rows_[row + 1].pc <= start) ++row;
    bucket_first_row_[bucket] = static_cast<uint32_t>(row);
  }
  bucket_first_row_[buckets] = static_cast<uint32_t>(rows_.size() - 1);
}

}  // namespace ctxprof
