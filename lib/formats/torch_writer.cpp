// torch::Writer: emits the pickle opcodes torch.save (protocol 2) produces for a state dict,
// and the zip layout around it.
#include <cstring>

#include "lib/core/error.h"
#include "lib/formats/file_io.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/torch_zip.h"

namespace oxi::torch {

namespace {

class PickleOut {
 public:
  void op(uint8_t code) { bytes.push_back(static_cast<std::byte>(code)); }
  void raw(const void* p, size_t n) {
    const size_t at = bytes.size();
    bytes.resize(at + n);
    std::memcpy(bytes.data() + at, p, n);
  }
  void str(std::string_view s) {
    op('X');  // BINUNICODE
    const auto n = static_cast<uint32_t>(s.size());
    raw(&n, 4);
    raw(s.data(), s.size());
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      op(static_cast<uint8_t>(v));
    } else if (v >= 0 && v < 65536) {
      op('M');
      const auto u = static_cast<uint16_t>(v);
      raw(&u, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      const auto i = static_cast<int32_t>(v);
      raw(&i, 4);
    } else {
      op(0x8a);  // LONG1, 8 bytes two's complement
      op(8);
      raw(&v, 8);
    }
  }
  void global(std::string_view module, std::string_view name) {
    op('c');
    raw(module.data(), module.size());
    op('\n');
    raw(name.data(), name.size());
    op('\n');
  }
  void int_tuple(const std::vector<int64_t>& v) {
    if (v.empty()) return op(')');
    if (v.size() > 3) op('(');
    for (int64_t x : v) integer(x);
    op(v.size() > 3 ? 't' : static_cast<uint8_t>(0x84 + v.size()));
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  std::vector<std::byte> bytes;
};

}  // namespace

Writer& Writer::add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                           std::vector<std::byte> data) {
  storage_type_name(dtype);  // throws for dtypes torch has no storage for
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  const auto expected = formats::tensor_bytes(dtype, numel);
  if (!expected || *expected != data.size()) {
    throw Error("torch writer", "tensor '" + name + "': data is " + std::to_string(data.size()) +
                                    " bytes, expected " + std::to_string(expected.value_or(0)));
  }
  tensors_.push_back({std::move(name), dtype, std::move(shape), std::move(data)});
  return *this;
}

Writer& Writer::nest_under(std::string key) {
  nest_key_ = std::move(key);
  return *this;
}

Writer& Writer::add_int_dict(std::string key, std::vector<std::pair<std::string, int64_t>> values) {
  int_dicts_.emplace_back(std::move(key), std::move(values));
  return *this;
}

Writer& Writer::set_archive_name(std::string name) {
  archive_name_ = std::move(name);
  return *this;
}

std::vector<std::byte> Writer::to_bytes() const {
  if (!int_dicts_.empty() && nest_key_.empty()) {
    throw Error("torch writer", "add_int_dict needs nest_under (the root is the state dict)");
  }
  PickleOut p;
  p.op(0x80);
  p.op(2);  // PROTO 2
  if (!nest_key_.empty()) {
    p.op('}');
    p.op('(');
    for (const auto& [key, values] : int_dicts_) {
      p.str(key);
      p.op('}');
      p.op('(');
      for (const auto& [k, v] : values) {
        p.str(k);
        p.integer(v);
      }
      p.op('u');
    }
    p.str(nest_key_);
  }
  p.empty_ordered_dict();
  p.op('(');
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    p.str(t.name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('(');
    // Persistent id of the storage: ('storage', torch.<Type>Storage, key, location, numel).
    p.op('(');
    p.str("storage");
    p.global("torch", storage_type_name(t.dtype));
    p.str(std::to_string(i));
    p.str("cpu");
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    p.integer(numel);
    p.op('t');
    p.op('Q');     // BINPERSID
    p.integer(0);  // storage offset
    p.int_tuple(t.shape);
    std::vector<int64_t> stride(t.shape.size());
    int64_t s = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      stride[d] = s;
      s *= t.shape[d];
    }
    p.int_tuple(stride);
    p.op(0x89);              // requires_grad = False
    p.empty_ordered_dict();  // backward hooks
    p.op('t');
    p.op('R');
  }
  p.op('u');
  if (!nest_key_.empty()) p.op('u');
  p.op('.');

  zip::Writer z;
  const std::string& a = archive_name_;
  z.add(a + "/data.pkl", p.bytes);
  static constexpr char kByteorder[] = "little";
  z.add(a + "/byteorder", std::as_bytes(std::span(kByteorder, 6)));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    z.add(a + "/data/" + std::to_string(i), tensors_[i].data);
  }
  static constexpr char kVersion[] = "3\n";
  z.add(a + "/version", std::as_bytes(std::span(kVersion, 2)));
  return z.finish();
}

void Writer::write(const std::filesystem::path& path) const {
  write_file(path, to_bytes());
}

}  // namespace oxi::torch
