//===- Pretrained.cpp - tensors to start fine-tuning from -----------------===//
//
// Three formats:
// * safetensors: an 8-byte little-endian header length, a JSON header
//   mapping each tensor's name to its dtype, shape and byte range of the
//   data section that follows ("__metadata__" aside);
// * npz: a zip archive of .npy files as numpy.savez writes it (entries
//   stored, possibly with zip64 extra fields); compressed entries
//   (numpy.savez_compressed) are refused with the remedy;
// * a Loom checkpoint (Training.h), whose list of parameters tells them
//   from the optimizer state.
//
//===----------------------------------------------------------------------===//

#include "Pretrained.h"
#include "Training.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace loom;
using namespace loom::run;

namespace {

uint64_t littleEndian(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= (uint64_t)(unsigned char)p[i] << (8 * i);
  return v;
}

bool dtypeOfSafetensors(llvm::StringRef name, loom_dtype_t &out) {
  static const std::pair<const char *, loom_dtype_t> known[] = {
      {"F32", LOOM_DTYPE_FLOAT32}, {"F64", LOOM_DTYPE_FLOAT64},
      {"F16", LOOM_DTYPE_FLOAT16}, {"BF16", LOOM_DTYPE_BFLOAT16},
      {"I64", LOOM_DTYPE_INT64},   {"I32", LOOM_DTYPE_INT32},
      {"I16", LOOM_DTYPE_INT16},   {"I8", LOOM_DTYPE_INT8},
      {"BOOL", LOOM_DTYPE_BOOL}};
  for (auto &[text, dtype] : known)
    if (name == text) {
      out = dtype;
      return true;
    }
  return false;
}

bool readSafetensors(const std::string &path, llvm::StringRef bytes,
                     Pretrained &out, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + " is not a valid .safetensors file: " + why;
    return false;
  };
  if (bytes.size() < 8)
    return fail("shorter than its 8-byte header length");
  uint64_t headerLen = littleEndian(bytes.data(), 8);
  if (headerLen > bytes.size() - 8)
    return fail("its header length " + std::to_string(headerLen) +
                " runs past the end of the file");
  llvm::Expected<llvm::json::Value> header =
      llvm::json::parse(bytes.substr(8, headerLen));
  if (!header)
    return fail("its header is not JSON: " +
                llvm::toString(header.takeError()));
  const llvm::json::Object *entries = header->getAsObject();
  if (!entries)
    return fail("its header is not a JSON object");
  llvm::StringRef data = bytes.drop_front(8 + headerLen);
  for (const auto &[key, value] : *entries) {
    std::string name = key.str();
    if (name == "__metadata__")
      continue;
    const llvm::json::Object *entry = value.getAsObject();
    if (!entry)
      return fail("entry \"" + name + "\" is not an object");
    std::optional<llvm::StringRef> dtype = entry->getString("dtype");
    const llvm::json::Array *shape = entry->getArray("shape");
    const llvm::json::Array *offsets = entry->getArray("data_offsets");
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return fail("entry \"" + name +
                  "\" lacks dtype, shape or two data_offsets");
    npy::Array a;
    if (!dtypeOfSafetensors(*dtype, a.dtype))
      return fail("\"" + name + "\" has dtype " + dtype->str() +
                  ", which Loom does not read");
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return fail("\"" + name + "\" has a bad shape");
      a.shape.push_back(*n);
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger(),
                           end = (*offsets)[1].getAsInteger();
    size_t want = a.numElements() * loom_dtype_size(a.dtype);
    if (!begin || !end || *begin < 0 || *end < *begin ||
        (uint64_t)*end > data.size())
      return fail("\"" + name + "\" has data offsets outside the file");
    if ((size_t)(*end - *begin) != want)
      return fail("\"" + name + "\" holds " + std::to_string(*end - *begin) +
                  " bytes, its shape needs " + std::to_string(want));
    a.data.assign(data.data() + *begin, data.data() + *end);
    out.tensors[name] = std::move(a);
  }
  return true;
}

bool readNpz(const std::string &path, llvm::StringRef bytes, Pretrained &out,
             std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + " is not a readable .npz archive: " + why;
    return false;
  };
  // The end-of-central-directory record: the last "PK\5\6" within the
  // final 64 KiB + 22 bytes.
  size_t eocd = std::string::npos;
  for (size_t i = bytes.size() >= 22 ? bytes.size() - 22 : 0;; --i) {
    if (bytes.substr(i, 4) == llvm::StringRef("PK\x05\x06", 4)) {
      eocd = i;
      break;
    }
    if (i == 0 || bytes.size() - i > 65557)
      break;
  }
  if (eocd == std::string::npos)
    return fail("no zip end-of-central-directory record");
  uint64_t count = littleEndian(bytes.data() + eocd + 10, 2);
  uint64_t at = littleEndian(bytes.data() + eocd + 16, 4);
  if (count == 0xffff || at == 0xffffffff) {
    // Zip64: the locator just before points at the zip64 record.
    if (eocd < 20 ||
        bytes.substr(eocd - 20, 4) != llvm::StringRef("PK\x06\x07", 4))
      return fail("a zip64 archive without its locator");
    uint64_t record = littleEndian(bytes.data() + eocd - 20 + 8, 8);
    if (record + 56 > bytes.size() ||
        bytes.substr(record, 4) != llvm::StringRef("PK\x06\x06", 4))
      return fail("a broken zip64 end-of-central-directory record");
    count = littleEndian(bytes.data() + record + 32, 8);
    at = littleEndian(bytes.data() + record + 48, 8);
  }
  for (uint64_t e = 0; e < count; ++e) {
    if (at + 46 > bytes.size() ||
        bytes.substr(at, 4) != llvm::StringRef("PK\x01\x02", 4))
      return fail("a broken central directory");
    const char *h = bytes.data() + at;
    uint64_t method = littleEndian(h + 10, 2);
    uint64_t compressed = littleEndian(h + 20, 4);
    uint64_t size = littleEndian(h + 24, 4);
    uint64_t nameLen = littleEndian(h + 28, 2),
             extraLen = littleEndian(h + 30, 2),
             commentLen = littleEndian(h + 32, 2);
    uint64_t local = littleEndian(h + 42, 4);
    if (at + 46 + nameLen + extraLen > bytes.size())
      return fail("a broken central directory");
    std::string name(h + 46, nameLen);
    // Zip64 extra field: the 64-bit values of the fields that are
    // 0xffffffff, in this order.
    for (uint64_t x = 0; x + 4 <= extraLen;) {
      const char *f = h + 46 + nameLen + x;
      uint64_t id = littleEndian(f, 2), len = littleEndian(f + 2, 2);
      if (id == 1) {
        const char *v = f + 4;
        if (size == 0xffffffff) {
          size = littleEndian(v, 8);
          v += 8;
        }
        if (compressed == 0xffffffff) {
          compressed = littleEndian(v, 8);
          v += 8;
        }
        if (local == 0xffffffff)
          local = littleEndian(v, 8);
      }
      x += 4 + len;
    }
    at += 46 + nameLen + extraLen + commentLen;
    if (method != 0) {
      error = path + ": member \"" + name +
              "\" is compressed (numpy.savez_compressed); Loom reads the "
              "archives numpy.savez writes";
      return false;
    }
    if (local + 30 > bytes.size() ||
        bytes.substr(local, 4) != llvm::StringRef("PK\x03\x04", 4))
      return fail("member \"" + name + "\" has no local header");
    uint64_t start = local + 30 + littleEndian(bytes.data() + local + 26, 2) +
                     littleEndian(bytes.data() + local + 28, 2);
    if (start + size > bytes.size())
      return fail("member \"" + name + "\" runs past the end of the file");
    llvm::StringRef tensor = name;
    if (!tensor.consume_back(".npy"))
      continue;
    npy::Array a;
    if (!npy::parse(bytes.data() + start, size, path + ":" + name, a, error))
      return false;
    out.tensors[tensor.str()] = std::move(a);
  }
  return true;
}

} // namespace

bool loom::run::readPretrained(const std::string &path, Pretrained &out,
                               std::string &error) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext != ".safetensors" && ext != ".npz") {
    train::Checkpoint ckpt;
    if (!train::readCheckpoint(path, ckpt, error))
      return false;
    // Checkpoints list their parameters; the other tensors are optimizer
    // state. (Older ones list nothing: all of theirs are candidates.)
    auto listed = ckpt.strings.find("parameters");
    llvm::SmallVector<llvm::StringRef> params;
    if (listed != ckpt.strings.end())
      llvm::StringRef(listed->second).split(params, '\n');
    for (auto &[name, a] : ckpt.tensors) {
      bool param = listed == ckpt.strings.end() ||
                   llvm::is_contained(params, llvm::StringRef(name));
      if (param)
        out.tensors[name] = std::move(a);
      else
        out.state[name] = true;
    }
    return true;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + path + ": " + buffer.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return ext == ".npz" ? readNpz(path, bytes, out, error)
                       : readSafetensors(path, bytes, out, error);
}
