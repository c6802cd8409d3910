// A restricted unpickler for PyTorch checkpoints (pickle protocols 2-5). It understands only
// the opcodes state dicts use and builds a small object tree from them; globals outside an
// allow-list (OrderedDict, torch's tensor/parameter rebuild functions, storage and dtype
// types) are rejected, and nothing is ever executed. Any other opcode is an oxi::Error that
// names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxi::pickle {

struct Object {
  enum class Kind { None, Bool, Int, Float, String, List, Tuple, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;

  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;  // String; Global: "module.name"

  std::vector<const Object*> items;                              // List, Tuple
  std::vector<std::pair<const Object*, const Object*>> entries;  // Dict, in insertion order

  // Storage: a persistent reference ('storage', torch.<Type>Storage, key, location, numel).
  std::string storage_type;  // "HalfStorage", "FloatStorage", ...
  std::string storage_key;   // the archive entry data/<key>
  std::string location;      // "cpu", "cuda:0"
  int64_t storage_numel = 0;

  // Tensor: torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
  const Object* storage = nullptr;
  int64_t storage_offset = 0;
  std::vector<int64_t> size;
  std::vector<int64_t> stride;

  // Dict lookup by string key; nullptr when absent or not a dict.
  const Object* get(std::string_view key) const;
  std::string_view kind_name() const;
};

// The unpickled tree; objects live as long as the document (they may share children, and
// a hostile pickle may even build cycles, so walkers must bound their depth).
class Document {
 public:
  const Object& root() const { return *root_; }

 private:
  friend class Unpickler;
  std::vector<std::unique_ptr<Object>> objects_;
  const Object* root_ = nullptr;
};

// Throws oxi::Error(context, problem) on malformed or disallowed input.
Document unpickle(std::span<const std::byte> bytes, std::string_view context);

}  // namespace oxi::pickle
