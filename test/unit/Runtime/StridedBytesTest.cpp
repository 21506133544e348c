//===- StridedBytesTest.cpp - packing point-to-point messages -------------===//
//
// loom.send packs its buffer into a message and loom.recv unpacks one, by
// contiguous runs: checked against the element-by-element layout for dense,
// row-strided and size-1-dimension memrefs, and a scalar.
//
//===----------------------------------------------------------------------===//

#include "StridedBytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using loom::rt::StridedBytes;

namespace {

/// A [rows, cols] window at (0, 0) of a [rows, pitch] buffer of int32
/// whose element (r, c) holds r * 1000 + c.
struct Window {
  std::vector<int32_t> buffer;
  StridedBytes bytes;
  Window(int64_t rows, int64_t cols, int64_t pitch)
      : buffer(rows * pitch, -1) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < pitch; ++c)
        buffer[r * pitch + c] = int32_t(r * 1000 + c);
    bytes = {reinterpret_cast<char *>(buffer.data()), sizeof(int32_t),
             {rows, cols}, {pitch, 1}};
  }
};

std::vector<int32_t> asInts(const std::vector<char> &packed) {
  std::vector<int32_t> out(packed.size() / sizeof(int32_t));
  std::memcpy(out.data(), packed.data(), packed.size());
  return out;
}

} // namespace

TEST(StridedBytes, DenseIsOneRun) {
  Window w(3, 4, 4);
  EXPECT_TRUE(w.bytes.dense());
  std::vector<char> packed;
  w.bytes.copy(packed, /*intoPacked=*/true);
  EXPECT_EQ(asInts(packed), w.buffer);
}

TEST(StridedBytes, RowsOfAWiderBuffer) {
  // Columns 0-2 of a 3 x 5 buffer: three runs of three.
  Window w(3, 3, 5);
  EXPECT_FALSE(w.bytes.dense());
  std::vector<char> packed;
  w.bytes.copy(packed, /*intoPacked=*/true);
  EXPECT_EQ(asInts(packed), (std::vector<int32_t>{0, 1, 2, 1000, 1001, 1002,
                                                  2000, 2001, 2002}));
  // Unpacking writes the window only: the columns past it keep their values.
  std::vector<int32_t> values = {7, 8, 9, 10, 11, 12, 13, 14, 15};
  std::memcpy(packed.data(), values.data(), packed.size());
  w.bytes.copy(packed, /*intoPacked=*/false);
  EXPECT_EQ(w.buffer, (std::vector<int32_t>{7, 8, 9, 3, 4, 10, 11, 12, 1003,
                                            1004, 13, 14, 15, 2003, 2004}));
}

TEST(StridedBytes, ColumnOfABuffer) {
  // Column 1 of a 3 x 4 buffer, as a [3, 1] memref at element 1: size-1
  // trailing dimension, rows 4 apart, so three runs of one element.
  Window w(3, 4, 4);
  StridedBytes column{w.bytes.data + sizeof(int32_t), sizeof(int32_t),
                      {3, 1}, {4, 7}};
  EXPECT_FALSE(column.dense());
  std::vector<char> packed;
  column.copy(packed, /*intoPacked=*/true);
  EXPECT_EQ(asInts(packed), (std::vector<int32_t>{1, 1001, 2001}));
}

TEST(StridedBytes, ScalarAndEmpty) {
  int32_t scalar = 42;
  StridedBytes one{reinterpret_cast<char *>(&scalar), sizeof scalar, {}, {}};
  EXPECT_TRUE(one.dense());
  std::vector<char> packed;
  one.copy(packed, /*intoPacked=*/true);
  EXPECT_EQ(asInts(packed), std::vector<int32_t>{42});

  StridedBytes none{reinterpret_cast<char *>(&scalar), sizeof scalar, {0, 3},
                    {3, 1}};
  none.copy(packed, /*intoPacked=*/true);
  EXPECT_TRUE(packed.empty());
}
