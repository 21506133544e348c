//===- TensorBoard.cpp - TensorBoard event files --------------------------===//

#include "TensorBoard.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <array>
#include <chrono>
#include <cstring>
#include <unistd.h>

using namespace loom::run;

namespace {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses.
uint32_t crc32c(const char *data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = ~0u;
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ (unsigned char)data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void littleEndian(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back((char)((v >> (8 * i)) & 0xff));
}

// Protobuf wire format: a key is (field << 3) | wire type.
void varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back((char)(v | 0x80));
    v >>= 7;
  }
  out.push_back((char)v);
}
void fieldBytes(std::string &out, int field, const std::string &bytes) {
  varint(out, (uint64_t)field << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}
void fieldDouble(std::string &out, int field, double v) {
  varint(out, (uint64_t)field << 3 | 1);
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  littleEndian(out, bits, 8);
}
void fieldFloat(std::string &out, int field, float v) {
  varint(out, (uint64_t)field << 3 | 5);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  littleEndian(out, bits, 4);
}
void fieldVarint(std::string &out, int field, uint64_t v) {
  varint(out, (uint64_t)field << 3 | 0);
  varint(out, v);
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

bool EventWriter::open(const std::string &dir, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  char host[256] = "localhost";
  (void)gethostname(host, sizeof(host) - 1);
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(
      path, "events.out.tfevents." + std::to_string((long long)now()) + "." +
                host + "." + std::to_string(llvm::sys::Process::getProcessId()) +
                ".loom");
  file = std::string(path);
  out.open(file, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "cannot write " + file;
    return false;
  }
  // Event { wall_time = 1; file_version = 3 }
  std::string event;
  fieldDouble(event, 1, now());
  fieldBytes(event, 3, "brain.Event:2");
  record(event);
  return true;
}

void EventWriter::scalar(const std::string &tag, int64_t step, double value) {
  // Summary.Value { tag = 1; simple_value = 2 }
  std::string v;
  fieldBytes(v, 1, tag);
  fieldFloat(v, 2, (float)value);
  // Summary { repeated Value value = 1 }
  std::string summary;
  fieldBytes(summary, 1, v);
  // Event { wall_time = 1; step = 2; summary = 5 }
  std::string event;
  fieldDouble(event, 1, now());
  fieldVarint(event, 2, (uint64_t)step);
  fieldBytes(event, 5, summary);
  record(event);
}

void EventWriter::record(const std::string &event) {
  std::string header;
  littleEndian(header, event.size(), 8);
  std::string framed = header;
  littleEndian(framed, masked(crc32c(header.data(), 8)), 4);
  framed += event;
  littleEndian(framed, masked(crc32c(event.data(), event.size())), 4);
  out.write(framed.data(), (std::streamsize)framed.size());
  out.flush();
}
