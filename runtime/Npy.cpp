//===- Npy.cpp - numpy .npy files -----------------------------------------===//
//
// The header is a Python dict literal; only the three keys numpy writes are
// read: 'descr', 'fortran_order' and 'shape'.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "Files.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

using namespace loom::npy;

static const char kMagic[] = "\x93NUMPY";

size_t Array::numElements() const {
  size_t n = 1;
  for (int64_t d : shape)
    n *= (size_t)d;
  return n;
}

std::string loom::npy::descrOf(loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_FLOAT32:
    return "<f4";
  case LOOM_DTYPE_FLOAT64:
    return "<f8";
  case LOOM_DTYPE_FLOAT16:
    return "<f2";
  case LOOM_DTYPE_INT64:
    return "<i8";
  case LOOM_DTYPE_INT32:
    return "<i4";
  case LOOM_DTYPE_INT16:
    return "<i2";
  case LOOM_DTYPE_INT8:
    return "|i1";
  case LOOM_DTYPE_BOOL:
    return "|b1";
  case LOOM_DTYPE_BFLOAT16:
    // numpy has no bfloat16; ml_dtypes (JAX's, PyTorch's and ONNX's numpy
    // type for it) saves it as 2-byte raw data, read back with
    // np.load(f).view(ml_dtypes.bfloat16).
    return "|V2";
  }
  return "";
}

/// The text after `'key':` in `header`, or npos.
static size_t valueOf(const std::string &header, const char *key) {
  std::string quoted = std::string("'") + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos)
    return at;
  at = header.find(':', at + quoted.size());
  if (at == std::string::npos)
    return at;
  at = header.find_first_not_of(" ", at + 1);
  return at;
}

/// Checks the `size` bytes of a .npy file at `data` and sets `out`'s type and
/// shape; its elements start at `dataStart`, and the file holds them all.
static bool parseHeader(const char *data, size_t size, const std::string &path,
                        loom::npy::Array &out, std::string &error,
                        size_t &dataStart) {
  struct Bytes {
    const char *data;
    size_t count;
    size_t size() const { return count; }
    char operator[](size_t i) const { return data[i]; }
  } bytes{data, size};
  auto fail = [&](const std::string &why) {
    error = path + " is not a valid .npy file: " + why;
    return false;
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data, kMagic, 6) != 0)
    return fail("missing the \\x93NUMPY magic");
  unsigned major = (unsigned char)bytes[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = (unsigned char)bytes[8] | ((unsigned char)bytes[9] << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= (size_t)(unsigned char)bytes[8 + i] << (8 * i);
    headerStart = 12;
  } else {
    return fail("format version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    return fail("truncated header");
  std::string header(bytes.data + headerStart, headerLen);

  size_t at = valueOf(header, "descr");
  if (at == std::string::npos || header[at] != '\'')
    return fail("no 'descr'");
  size_t end = header.find('\'', at + 1);
  std::string descr = header.substr(at + 1, end - at - 1);
  static const loom_dtype_t all[] = {
      LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64, LOOM_DTYPE_FLOAT16,
      LOOM_DTYPE_INT64,   LOOM_DTYPE_INT32,   LOOM_DTYPE_INT16,
      LOOM_DTYPE_INT8,    LOOM_DTYPE_BOOL,    LOOM_DTYPE_BFLOAT16};
  bool known = false;
  for (loom_dtype_t d : all)
    if (descrOf(d) == descr ||
        (descr.size() == 3 && (descr[0] == '=' || descr[0] == '<') &&
         descrOf(d).substr(1) == descr.substr(1))) {
      out.dtype = d;
      known = true;
    }
  if (!known)
    return fail("element type '" + descr + "' is not supported");

  at = valueOf(header, "fortran_order");
  if (at != std::string::npos && header.compare(at, 4, "True") == 0)
    return fail("Fortran-ordered arrays are not supported");

  at = valueOf(header, "shape");
  if (at == std::string::npos || header[at] != '(')
    return fail("no 'shape'");
  end = header.find(')', at);
  if (end == std::string::npos)
    return fail("unterminated 'shape'");
  out.shape.clear();
  std::string dims = header.substr(at + 1, end - at - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string item = dims.substr(pos, comma == std::string::npos
                                            ? std::string::npos
                                            : comma - pos);
    size_t first = item.find_first_not_of(' ');
    if (first != std::string::npos) {
      char *endp = nullptr;
      long long v = std::strtoll(item.c_str() + first, &endp, 10);
      if (endp == item.c_str() + first || v < 0)
        return fail("bad dimension '" + item + "'");
      out.shape.push_back(v);
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  size_t dataBytes = out.numElements() * loom_dtype_size(out.dtype);
  dataStart = headerStart + headerLen;
  if (bytes.size() - dataStart != dataBytes)
    return fail("holds " + std::to_string(bytes.size() - dataStart) +
                " bytes of data, its shape needs " + std::to_string(dataBytes));
  return true;
}

bool loom::npy::parse(const char *data, size_t size, const std::string &path,
                      Array &out, std::string &error) {
  size_t dataStart = 0;
  if (!parseHeader(data, size, path, out, error, dataStart))
    return false;
  out.data.assign(data + dataStart, data + size);
  return true;
}

bool loom::npy::read(const std::string &path, Array &out, std::string &error) {
  std::vector<char> bytes;
  if (!loom::rt::readWholeFile(path, bytes)) {
    error = "cannot read " + path;
    return false;
  }
  size_t dataStart = 0;
  if (!parseHeader(bytes.data(), bytes.size(), path, out, error, dataStart))
    return false;
  // The file's buffer becomes the array's, less its header: no second copy
  // of the elements.
  bytes.erase(bytes.begin(), bytes.begin() + dataStart);
  out.data = std::move(bytes);
  return true;
}

bool loom::npy::write(const std::string &path, const Array &array,
                      std::string &error) {
  std::string descr = descrOf(array.dtype);
  if (descr.empty()) {
    error = std::string("numpy has no ") + loom_dtype_name(array.dtype) +
            " type to write " + path + " with";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += std::to_string(array.shape[i]) + (array.shape.size() == 1 ? "," : (i + 1 < array.shape.size() ? ", " : ""));
  shape += ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      error = "cannot write " + tmp;
      return false;
    }
    out.write(kMagic, 6);
    out.put(1);
    out.put(0);
    out.put((char)(header.size() & 0xff));
    out.put((char)(header.size() >> 8));
    out.write(header.data(), header.size());
    out.write(array.data.data(), array.data.size());
    if (!out.good()) {
      error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = "cannot rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

double loom::npy::elementAsDouble(const char *data, loom_dtype_t dtype,
                                  size_t i) {
  switch (dtype) {
  case LOOM_DTYPE_FLOAT32: {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  case LOOM_DTYPE_FLOAT64: {
    double v;
    std::memcpy(&v, data + 8 * i, 8);
    return v;
  }
  case LOOM_DTYPE_INT64: {
    int64_t v;
    std::memcpy(&v, data + 8 * i, 8);
    return (double)v;
  }
  case LOOM_DTYPE_INT32: {
    int32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  case LOOM_DTYPE_INT16: {
    int16_t v;
    std::memcpy(&v, data + 2 * i, 2);
    return v;
  }
  case LOOM_DTYPE_INT8:
  case LOOM_DTYPE_BOOL:
    return (double)(signed char)data[i];
  case LOOM_DTYPE_BFLOAT16: {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, 2);
    uint32_t wide = (uint32_t)bits << 16;
    float v;
    std::memcpy(&v, &wide, 4);
    return v;
  }
  case LOOM_DTYPE_FLOAT16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * i, 2);
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0)
      return sign * std::ldexp(mantissa, -24);
    if (exponent == 31)
      return mantissa ? NAN : sign * INFINITY;
    return sign * std::ldexp(mantissa + 1024, exponent - 25);
  }
  }
  return NAN;
}

