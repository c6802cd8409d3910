// The restricted unpickler: a stack machine over the opcodes torch.save emits for state dicts.
#include "lib/formats/pickle.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/utf8.h"

namespace oxi::pickle {

namespace {

using K = Object::Kind;

bool allowed_global(std::string_view module, std::string_view name) {
  if (module == "collections" && name == "OrderedDict") return true;
  if (module == "torch._utils") {
    return name == "_rebuild_tensor_v2" || name == "_rebuild_tensor" ||
           name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state";
  }
  if (module == "torch") {
    static constexpr std::string_view kTypes[] = {
        "HalfStorage", "FloatStorage", "BFloat16Storage", "DoubleStorage",
        "LongStorage", "IntStorage",   "ShortStorage",    "CharStorage",
        "ByteStorage", "BoolStorage",  "float16",         "float32",
        "bfloat16",    "float64",      "int64",           "int32",
        "int16",       "int8",         "uint8",           "bool",
        "half",        "float",        "double",          "long",
        "int"};
    for (std::string_view t : kTypes) {
      if (name == t) return true;
    }
  }
  return false;
}

}  // namespace

const Object* Object::get(std::string_view key) const {
  if (kind != K::Dict) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k->kind == K::String && k->text == key) return v;
  }
  return nullptr;
}

std::string_view Object::kind_name() const {
  switch (kind) {
    case K::None:
      return "None";
    case K::Bool:
      return "bool";
    case K::Int:
      return "int";
    case K::Float:
      return "float";
    case K::String:
      return "str";
    case K::List:
      return "list";
    case K::Tuple:
      return "tuple";
    case K::Dict:
      return "dict";
    case K::Global:
      return "global";
    case K::Storage:
      return "storage";
    case K::Tensor:
      return "tensor";
  }
  return "?";
}

class Unpickler {
 public:
  Unpickler(std::span<const std::byte> bytes, std::string_view context)
      : in_(bytes, std::string(context)) {}

  Document run() {
    for (;;) {
      const size_t at = in_.pos();
      const auto op = static_cast<uint8_t>(in_.read<uint8_t>("pickle opcode"));
      if (op == '.') break;  // STOP
      step(op, at);
    }
    if (stack_.size() != 1)
      fail("pickle ends with " + std::to_string(stack_.size()) + " stack items");
    doc_.root_ = stack_.back();
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { in_.fail("pickle: " + problem); }

  Object* make(K kind) {
    doc_.objects_.push_back(std::make_unique<Object>());
    doc_.objects_.back()->kind = kind;
    return doc_.objects_.back().get();
  }
  Object* make_int(int64_t v) {
    Object* o = make(K::Int);
    o->integer = v;
    return o;
  }

  Object* pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      fail("stack underflow");
    }
    Object* o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Object* top() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      fail("stack underflow");
    }
    return stack_.back();
  }
  std::vector<Object*> pop_to_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Object*> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  std::string read_text(uint64_t len) {
    if (len > in_.remaining()) fail("string length " + std::to_string(len) + " runs past the end");
    std::string s(in_.take_chars(len, "pickle string"));
    if (!formats::is_valid_utf8(s)) fail("string is not valid UTF-8");
    return s;
  }
  std::string read_line() {
    std::string s;
    for (;;) {
      const char c = static_cast<char>(in_.read<uint8_t>("pickle GLOBAL"));
      if (c == '\n') return s;
      if (s.size() > 256) fail("GLOBAL name too long");
      s.push_back(c);
    }
  }

  void memo_put(uint64_t index) { memo_[index] = top(); }
  Object* memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " not defined");
    return it->second;
  }

  Object* global(std::string module, std::string name) {
    if (!allowed_global(module, name)) {
      fail("global '" + module + "." + name + "' is not allowed in a state dict");
    }
    Object* o = make(K::Global);
    o->text = module + "." + name;
    return o;
  }

  static bool same_key(const Object* a, const Object* b) {
    if (a->kind != b->kind) return false;
    if (a->kind == K::String) return a->text == b->text;
    if (a->kind == K::Int) return a->integer == b->integer;
    return a == b;
  }
  void dict_set(Object* dict, const Object* key, const Object* value) {
    if (dict->kind != K::Dict) fail("SETITEM on a " + std::string(dict->kind_name()));
    for (auto& [k, v] : dict->entries) {
      if (same_key(k, key)) {
        v = value;
        return;
      }
    }
    dict->entries.emplace_back(key, value);
  }

  int64_t as_int(const Object* o, std::string_view what) {
    if (o->kind != K::Int)
      fail(std::string(what) + " is a " + std::string(o->kind_name()) + ", not an int");
    return o->integer;
  }
  std::vector<int64_t> as_int_tuple(const Object* o, std::string_view what) {
    if (o->kind != K::Tuple && o->kind != K::List) fail(std::string(what) + " is not a tuple");
    std::vector<int64_t> v;
    for (const Object* x : o->items) v.push_back(as_int(x, what));
    return v;
  }

  Object* persistent_load(Object* pid) {
    if (pid->kind != K::Tuple || pid->items.size() != 5 || pid->items[0]->kind != K::String ||
        pid->items[0]->text != "storage") {
      fail("persistent id is not ('storage', type, key, location, numel)");
    }
    const Object* type = pid->items[1];
    if (type->kind != K::Global || !type->text.starts_with("torch.") ||
        !type->text.ends_with("Storage")) {
      fail("persistent id storage type is not a torch storage type");
    }
    if (pid->items[2]->kind != K::String || pid->items[3]->kind != K::String) {
      fail("persistent id key/location are not strings");
    }
    Object* s = make(K::Storage);
    s->storage_type = type->text.substr(6);
    s->storage_key = pid->items[2]->text;
    s->location = pid->items[3]->text;
    s->storage_numel = as_int(pid->items[4], "storage numel");
    if (s->storage_numel < 0) fail("negative storage size");
    return s;
  }

  Object* reduce(Object* callable, Object* args) {
    if (callable->kind != K::Global) fail("REDUCE on a " + std::string(callable->kind_name()));
    if (args->kind != K::Tuple) fail("REDUCE arguments are not a tuple");
    const auto& a = args->items;
    const std::string& f = callable->text;
    if (f == "collections.OrderedDict") {
      Object* d = make(K::Dict);
      if (a.empty()) return d;
      if (a.size() != 1 || (a[0]->kind != K::List && a[0]->kind != K::Tuple)) {
        fail("OrderedDict() with unexpected arguments");
      }
      for (const Object* pair : a[0]->items) {
        if ((pair->kind != K::Tuple && pair->kind != K::List) || pair->items.size() != 2) {
          fail("OrderedDict() item is not a pair");
        }
        dict_set(d, pair->items[0], pair->items[1]);
      }
      return d;
    }
    if (f == "torch._utils._rebuild_tensor_v2" || f == "torch._utils._rebuild_tensor") {
      if (a.size() < 4) fail(f + " with fewer than 4 arguments");
      if (a[0]->kind != K::Storage) fail(f + ": first argument is not a storage");
      Object* t = make(K::Tensor);
      t->storage = a[0];
      t->storage_offset = as_int(a[1], "storage offset");
      t->size = as_int_tuple(a[2], "tensor size");
      t->stride = as_int_tuple(a[3], "tensor stride");
      if (t->size.size() != t->stride.size()) fail("tensor size and stride differ in length");
      return t;
    }
    if (f == "torch._utils._rebuild_parameter" ||
        f == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->kind != K::Tensor) fail(f + ": first argument is not a tensor");
      return const_cast<Object*>(a[0]);  // the document owns every object mutably
    }
    fail("'" + f + "' cannot be called");
  }

  void step(uint8_t op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t proto = in_.read<uint8_t>("PROTO");
        if (proto < 2 || proto > 5) fail("unsupported pickle protocol " + std::to_string(proto));
        break;
      }
      case 0x95:
        in_.read<uint64_t>("FRAME");
        break;  // frame sizes only help streaming readers
      case '(':
        marks_.push_back(stack_.size());
        break;
      case '}':
        stack_.push_back(make(K::Dict));
        break;
      case ']':
        stack_.push_back(make(K::List));
        break;
      case ')':
        stack_.push_back(make(K::Tuple));
        break;
      case 'd': {  // DICT
        auto items = pop_to_mark();
        if (items.size() % 2) fail("DICT with an odd number of items");
        Object* d = make(K::Dict);
        for (size_t i = 0; i < items.size(); i += 2) dict_set(d, items[i], items[i + 1]);
        stack_.push_back(d);
        break;
      }
      case 'l': {  // LIST
        Object* l = make(K::List);
        for (Object* o : pop_to_mark()) l->items.push_back(o);
        stack_.push_back(l);
        break;
      }
      case 't': {  // TUPLE
        Object* t = make(K::Tuple);
        for (Object* o : pop_to_mark()) t->items.push_back(o);
        stack_.push_back(t);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        Object* t = make(K::Tuple);
        t->items.resize(n);
        for (size_t i = n; i-- > 0;) t->items[i] = pop();
        stack_.push_back(t);
        break;
      }
      case 'q':
        memo_put(in_.read<uint8_t>("BINPUT"));
        break;
      case 'r':
        memo_put(in_.read<uint32_t>("LONG_BINPUT"));
        break;
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        stack_.push_back(memo_get(in_.read<uint8_t>("BINGET")));
        break;
      case 'j':
        stack_.push_back(memo_get(in_.read<uint32_t>("LONG_BINGET")));
        break;
      case 'J':
        stack_.push_back(make_int(in_.read<int32_t>("BININT")));
        break;
      case 'K':
        stack_.push_back(make_int(in_.read<uint8_t>("BININT1")));
        break;
      case 'M':
        stack_.push_back(make_int(in_.read<uint16_t>("BININT2")));
        break;
      case 0x8a: {  // LONG1: little-endian two's complement of n bytes
        const uint8_t n = in_.read<uint8_t>("LONG1");
        if (n > 8) fail("integer of " + std::to_string(n) + " bytes is too large");
        const auto b = in_.take(n, "LONG1");
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
        stack_.push_back(make_int(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        uint64_t bits = __builtin_bswap64(in_.read<uint64_t>("BINFLOAT"));
        Object* o = make(K::Float);
        o->real = std::bit_cast<double>(bits);
        stack_.push_back(o);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d: {  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
        const uint64_t len = op == 'X'    ? in_.read<uint32_t>("BINUNICODE")
                             : op == 0x8c ? in_.read<uint8_t>("SHORT_BINUNICODE")
                                          : in_.read<uint64_t>("BINUNICODE8");
        Object* o = make(K::String);
        o->text = read_text(len);
        stack_.push_back(o);
        break;
      }
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Object* o = make(K::Bool);
        o->boolean = op == 0x88;
        stack_.push_back(o);
        break;
      }
      case 'N':
        stack_.push_back(make(K::None));
        break;
      case 'c': {  // GLOBAL "module\nname\n"
        std::string module = read_line();
        std::string name = read_line();
        stack_.push_back(global(std::move(module), std::move(name)));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Object* name = pop();
        Object* module = pop();
        if (module->kind != K::String || name->kind != K::String)
          fail("STACK_GLOBAL of non-strings");
        stack_.push_back(global(module->text, name->text));
        break;
      }
      case 'R': {  // REDUCE
        Object* args = pop();
        Object* callable = pop();
        stack_.push_back(reduce(callable, args));
        break;
      }
      case 'Q':
        stack_.push_back(persistent_load(pop()));
        break;     // BINPERSID
      case 's': {  // SETITEM
        Object* value = pop();
        Object* key = pop();
        dict_set(top(), key, value);
        break;
      }
      case 'u': {  // SETITEMS
        auto items = pop_to_mark();
        if (items.size() % 2) fail("SETITEMS with an odd number of items");
        Object* d = top();
        for (size_t i = 0; i < items.size(); i += 2) dict_set(d, items[i], items[i + 1]);
        break;
      }
      case 'a': {  // APPEND
        Object* v = pop();
        Object* l = top();
        if (l->kind != K::List) fail("APPEND to a " + std::string(l->kind_name()));
        l->items.push_back(v);
        break;
      }
      case 'e': {  // APPENDS
        auto items = pop_to_mark();
        Object* l = top();
        if (l->kind != K::List) fail("APPENDS to a " + std::string(l->kind_name()));
        l->items.insert(l->items.end(), items.begin(), items.end());
        break;
      }
      case 'b': {  // BUILD: state of OrderedDicts and tensors carries nothing we use
        pop();
        Object* o = top();
        if (o->kind != K::Dict && o->kind != K::Tensor) {
          fail("BUILD on a " + std::string(o->kind_name()));
        }
        break;
      }
      case '0':
        pop();
        break;  // POP
      case '1':
        pop_to_mark();
        break;  // POP_MARK
      case '2':
        stack_.push_back(top());
        break;  // DUP
      default: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "unsupported opcode 0x%02x ('%c') at offset %zu", op,
                      op >= 0x20 && op < 0x7f ? op : '?', at);
        fail(buf);
      }
    }
  }

  formats::ByteCursor in_;
  Document doc_;
  std::vector<Object*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Object*> memo_;
};

Document unpickle(std::span<const std::byte> bytes, std::string_view context) {
  return Unpickler(bytes, context).run();
}

}  // namespace oxi::pickle
