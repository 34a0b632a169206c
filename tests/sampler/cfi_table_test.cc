// CfiTable (profiler/sampler/cfi_table.h) on hand-assembled .eh_frame_hdr/.eh_frame images: what
// each supported CFI form compiles to, what ends a walk, and that a malformed or truncated image
// never reads outside the readable ranges it is given (ASan checks that on the heap buffer).
#include "profiler/sampler/cfi_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace ctxprof {
namespace {

using Bytes = std::vector<uint8_t>;

// DWARF constants spelled out for readability of the programs below.
constexpr uint8_t kAdvance = 0x40;        // DW_CFA_advance_loc | delta
constexpr uint8_t kOffsetRbp = 0x80 | 6;  // DW_CFA_offset r6, ULEB128 factored offset
constexpr uint8_t kDefCfa = 0x0c;
constexpr uint8_t kDefCfaRegister = 0x0d;
constexpr uint8_t kDefCfaOffset = 0x0e;
constexpr uint8_t kDefCfaExpression = 0x0f;
constexpr uint8_t kRememberState = 0x0a;
constexpr uint8_t kRestoreState = 0x0b;
constexpr uint8_t kUndefined = 0x07;
constexpr uint8_t kRegister = 0x09;
constexpr uint8_t kAdvanceLoc2 = 0x03;

void Put32(Bytes* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void Put64(Bytes* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// Lays out [.eh_frame_hdr][one CIE][FDEs...][terminator] in one buffer whose address is known
// only at Finish(): FDE addresses are absolute 8-byte values (DW_EH_PE_udata8), the search table
// is relative to the header (DW_EH_PE_datarel | DW_EH_PE_sdata4), as linkers write it.
class EhFrameImage {
 public:
  static constexpr uintptr_t kBias = 0x100000;

  void AddFde(uint32_t start, uint32_t length, Bytes program) {
    fdes_.push_back({start, length, std::move(program)});
  }
  void set_version(uint8_t version) { version_ = version; }
  void set_count_encoding(uint8_t encoding) { count_encoding_ = encoding; }

  // Builds the image; `header_` then points at the .eh_frame_hdr.
  void Finish() {
    const size_t header_size = 4 + 8 + 4 + 8 * fdes_.size();
    Bytes frames;
    // CIE: "zR", code alignment 1, data alignment -8, return address r16, FDE pointers udata8;
    // initially CFA = rsp + 8 and the return address at CFA - 8.
    const Bytes cie_body = {0,    0,  0, 0,    1,       'z', 'R', 0,         1,
                            0x78, 16, 1, 0x04, kDefCfa, 7,   8,   0x80 | 16, 1};
    Put32(&frames, static_cast<uint32_t>(cie_body.size()));
    frames.insert(frames.end(), cie_body.begin(), cie_body.end());
    std::vector<size_t> fde_offsets;
    for (const Fde& fde : fdes_) {
      fde_offsets.push_back(frames.size());
      Bytes body;
      Put32(&body, static_cast<uint32_t>(frames.size() + 4));  // back to the CIE at 0
      Put64(&body, kBias + fde.start);
      Put64(&body, fde.length);
      body.push_back(0);  // augmentation data length
      body.insert(body.end(), fde.program.begin(), fde.program.end());
      Put32(&frames, static_cast<uint32_t>(body.size()));
      frames.insert(frames.end(), body.begin(), body.end());
    }
    Put32(&frames, 0);  // terminator
    image_.assign(header_size + frames.size(), 0);
    const uintptr_t base = reinterpret_cast<uintptr_t>(image_.data());
    Bytes header = {version_, 0x04 /* udata8 */, count_encoding_, 0x3b /* datarel sdata4 */};
    Put64(&header, base + header_size);
    Put32(&header, static_cast<uint32_t>(fdes_.size()));
    for (size_t i = 0; i < fdes_.size(); ++i) {
      Put32(&header, static_cast<uint32_t>(kBias + fdes_[i].start - base));
      Put32(&header, static_cast<uint32_t>(header_size + fde_offsets[i]));
    }
    memcpy(image_.data(), header.data(), header.size());
    memcpy(image_.data() + header_size, frames.data(), frames.size());
    frames_offset_ = header_size;
  }

  uintptr_t header() const { return reinterpret_cast<uintptr_t>(image_.data()); }
  uintptr_t end() const { return header() + image_.size(); }
  size_t frames_offset() const { return frames_offset_; }

  StatusOr<std::unique_ptr<CfiTable>> Build(uintptr_t readable_end = 0) const {
    return CfiTable::Build(kBias, header(), {{header(), readable_end ? readable_end : end()}});
  }

 private:
  struct Fde {
    uint32_t start;
    uint32_t length;
    Bytes program;
  };
  std::vector<Fde> fdes_;
  Bytes image_;
  size_t frames_offset_ = 0;
  uint8_t version_ = 1;
  uint8_t count_encoding_ = 0x03;  // udata4
};

// A row's rule in one comparable line.
std::string Describe(const CfiRow* row) {
  if (row == nullptr) return "none";
  switch (row->rule) {
    case CfaRule::kSp:
    case CfaRule::kFp:
      return std::string(row->rule == CfaRule::kSp ? "sp" : "fp") + "+" +
             std::to_string(row->cfa_offset) + " ra@" + std::to_string(row->return_address_offset) +
             " fp@" +
             (row->fp_offset == CfiRow::kFpLost ? std::string("lost")
                                                : std::to_string(row->fp_offset));
    case CfaRule::kPltStub:
      return "plt sp+" + std::to_string(row->cfa_offset) + " threshold " +
             std::to_string(row->fp_offset);
    case CfaRule::kSignalFrame:
      return "signal frame";
    case CfaRule::kOutermost:
      return "outermost";
    case CfaRule::kNoInfo:
      return "no info";
    case CfaRule::kUnsupported:
      return "unsupported";
  }
  return "?";
}

std::string At(const CfiTable& table, uint32_t offset) {
  return Describe(table.Find(EhFrameImage::kBias + offset));
}

TEST(CfiTableTest, CompilesAPrologueBodyAndEpilogue) {
  EhFrameImage image;
  // push %rbp; mov %rsp,%rbp; ...; pop %rbp; ret
  image.AddFde(0x1000, 0x40,
               {kAdvance | 1, kDefCfaOffset, 16, kOffsetRbp, 2, kAdvance | 3, kDefCfaRegister, 6,
                kAdvance | 0x30, kDefCfa, 7, 8});
  image.Finish();
  const StatusOr<std::unique_ptr<CfiTable>> built = image.Build();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const CfiTable& table = *built.value();
  EXPECT_EQ(At(table, 0x0fff), "none");
  EXPECT_EQ(At(table, 0x1000), "sp+8 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x1001), "sp+16 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x1003), "sp+16 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x1004), "fp+16 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x1033), "fp+16 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x1034), "sp+8 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x103f), "sp+8 ra@-8 fp@-16");
  EXPECT_EQ(At(table, 0x1040), "no info");
  EXPECT_EQ(At(table, 0x7fffffff), "no info");
}

TEST(CfiTableTest, RememberAndRestoreStateAndAdjacentFunctions) {
  EhFrameImage image;
  image.AddFde(0x1000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
  // An early return inside the body: the state is remembered, changed and restored.
  image.AddFde(0x1010, 0x20,
               {kAdvance | 1, kDefCfaOffset, 16, kRememberState, kAdvance | 4, kDefCfaOffset, 8,
                kAdvance | 2, kRestoreState, kAdvanceLoc2, 0x00, 0x01 /* 256 */, kDefCfaOffset,
                0x80, 0x80, 0x04 /* 65536 */});
  image.Finish();
  const StatusOr<std::unique_ptr<CfiTable>> built = image.Build();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const CfiTable& table = *built.value();
  EXPECT_EQ(At(table, 0x100f), "sp+16 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x1010), "sp+8 ra@-8 fp@0");  // the next function starts right there
  EXPECT_EQ(At(table, 0x1011), "sp+16 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x1015), "sp+8 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x1017), "sp+16 ra@-8 fp@0");
  // The last advance (256 bytes) leaves the function's range: no row for the big offset.
  EXPECT_EQ(At(table, 0x102f), "sp+16 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x1030), "no info");
}

TEST(CfiTableTest, GapsRootsPltStubsAndWhatEndsAWalk) {
  EhFrameImage image;
  image.AddFde(0x1000, 0x10, {});
  image.AddFde(0x2000, 0x10, {kUndefined, 16});  // clone3 / _start: the return address undefined
  // A lazy-binding PLT: rsp + 8, or + 16 once the stub pushed its index (pc & 15 >= 11).
  image.AddFde(0x3000, 0x20,
               {kDefCfaOffset, 16, kAdvance | 6, kDefCfaOffset, 24, kAdvance | 10,
                kDefCfaExpression, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22});
  // CFA = *(rbp - 8) (stack realignment): not interpreted.
  image.AddFde(0x4000, 0x10, {kAdvance | 4, kDefCfaExpression, 3, 0x76, 0x78, 0x06});
  // rbp kept in rbx: the caller's fp cannot be recovered from the stack.
  image.AddFde(0x5000, 0x10, {kAdvance | 2, kRegister, 6, 3});
  // An opcode this compiler does not know (0x3f): the whole function is unsupported...
  image.AddFde(0x6000, 0x10, {kAdvance | 1, kDefCfaOffset, 16, kAdvance | 1, 0x3f});
  // ... and the next one is not affected.
  image.AddFde(0x6010, 0x10, {kAdvance | 1, kDefCfaOffset, 32});
  image.Finish();
  const StatusOr<std::unique_ptr<CfiTable>> built = image.Build();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const CfiTable& table = *built.value();
  EXPECT_EQ(At(table, 0x1800), "no info");
  EXPECT_EQ(At(table, 0x2004), "outermost");
  EXPECT_EQ(At(table, 0x3000), "sp+16 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x3006), "sp+24 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x3010), "plt sp+8 threshold 11");
  EXPECT_EQ(At(table, 0x301f), "plt sp+8 threshold 11");
  EXPECT_EQ(At(table, 0x4000), "sp+8 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x4004), "unsupported");
  EXPECT_EQ(At(table, 0x5002), "sp+8 ra@-8 fp@lost");
  EXPECT_EQ(At(table, 0x6000), "unsupported");
  EXPECT_EQ(At(table, 0x600f), "unsupported");
  EXPECT_EQ(At(table, 0x6010), "sp+8 ra@-8 fp@0");
  EXPECT_EQ(At(table, 0x6011), "sp+32 ra@-8 fp@0");
}

TEST(CfiTableTest, RefusesAnUnusableIndex) {
  // Fails with kInvalidArgument, and the message says `why`.
  auto expect_refused = [](const StatusOr<std::unique_ptr<CfiTable>>& built, const char* why) {
    ASSERT_FALSE(built.ok()) << why;
    EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(built.status().message().find(why), std::string::npos) << built.status().message();
  };
  EhFrameImage wrong_version;
  wrong_version.AddFde(0x1000, 0x10, {});
  wrong_version.set_version(2);
  wrong_version.Finish();
  expect_refused(wrong_version.Build(), "version 2");

  EhFrameImage no_table;
  no_table.AddFde(0x1000, 0x10, {});
  no_table.set_count_encoding(0xff);
  no_table.Finish();
  expect_refused(no_table.Build(), "no binary search table");

  EhFrameImage image;
  image.AddFde(0x1000, 0x10, {});
  image.Finish();
  expect_refused(CfiTable::Build(EhFrameImage::kBias, image.header(), {}),
                 "not in a readable segment");

  // A corrupt FDE far away would make the index huge.
  EhFrameImage sparse;
  sparse.AddFde(0x1000, 0x10, {});
  sparse.AddFde(0x1000 + (600u << 20), 0x10, {});
  sparse.Finish();
  expect_refused(sparse.Build(), "more than 512 MiB");
}

// Readable memory ending anywhere in .eh_frame: the FDEs it cuts are left out (no FDE at all:
// no table), the others are compiled, and nothing past the end is read (ASan would report the
// heap overflow).
TEST(CfiTableTest, NeverReadsPastTheReadableRange) {
  EhFrameImage image;
  image.AddFde(0x1000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
  image.AddFde(0x2000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
  image.Finish();
  for (uintptr_t end = image.header() + image.frames_offset(); end < image.end() - 4; ++end) {
    const StatusOr<std::unique_ptr<CfiTable>> table = image.Build(end);
    if (!table.ok()) {  // not even the first FDE is readable
      EXPECT_NE(table.status().message().find("no FDE"), std::string::npos)
          << table.status().message();
      continue;
    }
    EXPECT_NE(At(*table.value(), 0x2001), "sp+16 ra@-8 fp@0")
        << "read past " << end - image.header();
  }
  const StatusOr<std::unique_ptr<CfiTable>> whole = image.Build();
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(At(*whole.value(), 0x2001), "sp+16 ra@-8 fp@0");
}

}  // namespace
}  // namespace ctxprof
