#include "tools/oxinfer/pipeline_file.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "lib/core/error.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {
namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool is_name_start(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// The length of a parameter name at the start of `s` (0 if none).
size_t name_length(std::string_view s) {
  if (s.empty() || !is_name_start(s[0])) return 0;
  size_t n = 1;
  while (n < s.size() && is_name_char(s[n])) ++n;
  return n;
}

// One piece of a launch description: literal text, or a placeholder and whether it sits in a
// "quoted" string.
struct Piece {
  std::string text;  // literal text, or the parameter name
  bool placeholder = false;
  bool quoted = false;
};

// Splits a launch description into literal text and placeholders; `open_quote` tells whether
// a quoted string is left open at the end.
std::vector<Piece> split_launch(std::string_view launch, bool* open_quote = nullptr) {
  std::vector<Piece> pieces;
  std::string literal;
  bool quoted = false;
  for (size_t i = 0; i < launch.size(); ++i) {
    const char c = launch[i];
    if (c == '\\' && quoted && i + 1 < launch.size()) {  // an escape inside a quoted string
      literal += c;
      literal += launch[++i];
      continue;
    }
    if (c == '"') quoted = !quoted;
    if ((c == '{' || c == '}') && i + 1 < launch.size() && launch[i + 1] == c) {
      literal += c;
      ++i;
      continue;
    }
    if (c == '{') {
      const size_t n = name_length(launch.substr(i + 1));
      if (n > 0 && i + 1 + n < launch.size() && launch[i + 1 + n] == '}') {
        if (!literal.empty()) pieces.push_back({std::move(literal), false, false});
        literal.clear();
        pieces.push_back({std::string(launch.substr(i + 1, n)), true, quoted});
        i += n + 1;
        continue;
      }
    }
    literal += c;
  }
  if (!literal.empty()) pieces.push_back({std::move(literal), false, false});
  if (open_quote) *open_quote = quoted;
  return pieces;
}

// A value placed inside a "quoted" string of the launch description: gst_parse_launch unescapes
// \" and \\ there.
std::string escape_quoted(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// `NAME`, `NAME=word` or `NAME="quoted words"`, then the help text.
PipelineParam parse_param(std::string_view rest, const std::string& where) {
  PipelineParam p;
  const size_t n = name_length(rest);
  if (n == 0)
    throw Error(where, "@param needs a name: a lowercase letter, then letters, digits, - or _");
  p.name = std::string(rest.substr(0, n));
  rest.remove_prefix(n);
  if (!rest.empty() && rest[0] == '=') {
    rest.remove_prefix(1);
    std::string value;
    if (!rest.empty() && rest[0] == '"') {
      size_t i = 1;
      bool closed = false;
      for (; i < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) {
          value += rest[++i];
        } else if (rest[i] == '"') {
          closed = true;
          break;
        } else {
          value += rest[i];
        }
      }
      if (!closed) throw Error(where, "the default of '" + p.name + "' has no closing quote");
      rest.remove_prefix(i + 1);
    } else {
      size_t i = 0;
      while (i < rest.size() && rest[i] != ' ' && rest[i] != '\t') ++i;
      value = std::string(rest.substr(0, i));
      rest.remove_prefix(i);
    }
    p.default_value = std::move(value);
  }
  if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t')
    throw Error(where, "unexpected '" + std::string(rest.substr(0, 1)) + "' after parameter '" +
                           p.name + "'");
  p.help = std::string(trim(rest));
  if (p.help.empty()) throw Error(where, "parameter '" + p.name + "' has no help text");
  return p;
}

}  // namespace

const PipelineParam* PipelineFile::find(std::string_view param) const {
  for (const PipelineParam& p : params)
    if (p.name == param) return &p;
  return nullptr;
}

std::string PipelineFile::param_names() const {
  std::string out;
  for (const PipelineParam& p : params) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

PipelineFile parse_pipeline(std::string_view text, const std::string& name) {
  PipelineFile out;
  out.name = name;
  std::vector<std::string> body;
  bool in_header = true, have_description = false;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view raw = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    const std::string where = name + ":" + std::to_string(line_no);
    const std::string_view line = trim(raw);

    if (!line.empty() && line[0] == '#') {
      if (!in_header)
        throw Error(where, "comments belong in the header, before the launch description");
      std::string_view comment = trim(line.substr(1));
      if (!have_description) {
        if (comment.empty() || comment[0] == '@')
          throw Error(where, "the first line must be '# ' and a one-line description");
        out.description = std::string(comment);
        have_description = true;
        continue;
      }
      if (comment.starts_with("@param ") || comment == "@param") {
        PipelineParam p = parse_param(trim(comment.substr(6)), where);
        if (out.find(p.name)) throw Error(where, "parameter '" + p.name + "' declared twice");
        out.params.push_back(std::move(p));
      } else if (!comment.empty() && comment[0] == '@') {
        throw Error(where, "unknown header keyword '" +
                               std::string(comment.substr(0, comment.find(' '))) +
                               "' (only @param)");
      }
      continue;
    }
    if (!have_description) throw Error(where, "a pipeline file starts with '# ' and a description");
    in_header = false;
    if (line.empty()) continue;
    std::string_view content = line;
    if (content.back() == '\\') content = trim(content.substr(0, content.size() - 1));
    if (!content.empty()) body.emplace_back(content);
  }
  if (!have_description) throw Error(name, "empty pipeline file");
  for (const std::string& b : body) out.launch += (out.launch.empty() ? "" : " ") + b;
  if (out.launch.empty()) throw Error(name, "no launch description after the header");

  std::set<std::string> used;
  bool open_quote = false;
  for (const Piece& piece : split_launch(out.launch, &open_quote)) {
    if (!piece.placeholder) continue;
    if (!out.find(piece.text))
      throw Error(name, "{" + piece.text +
                            "} is not a declared parameter (declared: " + out.param_names() + ")");
    used.insert(piece.text);
  }
  for (const PipelineParam& p : out.params)
    if (!used.count(p.name)) throw Error(name, "parameter '" + p.name + "' is never used");
  if (open_quote) throw Error(name, "a quoted string in the launch description is not closed");
  return out;
}

PipelineFile load_pipeline_file(const fs::path& file) {
  PipelineFile p = parse_pipeline(read_text_file(file), file.stem().string());
  p.path = file;
  return p;
}

std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& args) {
  std::map<std::string, std::string> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(a, "expected a parameter as key=value");
    const std::string key = a.substr(0, eq);
    if (!out.emplace(key, a.substr(eq + 1)).second) throw Error(key, "parameter given twice");
  }
  return out;
}

std::string expand_pipeline(const PipelineFile& pipeline,
                            const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    if (!pipeline.find(key))
      throw Error(pipeline.name,
                  "unknown parameter '" + key + "' (parameters: " + pipeline.param_names() + ")");
  }
  std::vector<std::string> missing;
  for (const PipelineParam& p : pipeline.params) {
    const auto it = values.find(p.name);
    if (p.required() && (it == values.end() || it->second.empty())) missing.push_back(p.name);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m + "=...";
    throw Error(pipeline.name,
                "missing required parameter" + std::string(missing.size() > 1 ? "s " : " ") + list);
  }
  std::string out;
  for (const Piece& piece : split_launch(pipeline.launch)) {
    if (!piece.placeholder) {
      out += piece.text;
      continue;
    }
    const auto it = values.find(piece.text);
    const std::string& value =
        it != values.end() ? it->second : *pipeline.find(piece.text)->default_value;
    out += piece.quoted ? escape_quoted(value) : value;
  }
  return out;
}

std::vector<fs::path> pipeline_search_dirs() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("OXINFER_PIPELINES_DIR")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      if (colon != 0) candidates.emplace_back(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
#ifdef OXI_PIPELINES_SOURCE_DIR
  candidates.emplace_back(OXI_PIPELINES_SOURCE_DIR);
#endif
#ifdef OXI_PIPELINES_INSTALL_DIR
  candidates.emplace_back(OXI_PIPELINES_INSTALL_DIR);
#endif
  std::vector<fs::path> dirs;
  for (const fs::path& d : candidates) {
    std::error_code ec;
    if (fs::is_directory(d, ec) && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
      dirs.push_back(d);
  }
  return dirs;
}

fs::path find_pipeline(const std::string& name, const std::vector<fs::path>& dirs) {
  std::error_code ec;
  if (name.find('/') != std::string::npos || name.ends_with(".pipeline")) {
    if (fs::is_regular_file(name, ec)) return name;
    throw Error(name, "no such pipeline file");
  }
  for (const fs::path& d : dirs) {
    const fs::path file = d / (name + ".pipeline");
    if (fs::is_regular_file(file, ec)) return file;
  }
  std::set<std::string> names;
  for (const fs::path& d : dirs) {
    for (const auto& entry : fs::directory_iterator(d, ec))
      if (entry.path().extension() == ".pipeline") names.insert(entry.path().stem().string());
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  std::string searched;
  for (const fs::path& d : dirs) searched += (searched.empty() ? "" : ", ") + d.string();
  throw Error(name, "no such pipeline (pipelines: " + (list.empty() ? "none" : list) +
                        "; searched: " + (searched.empty() ? "no directory" : searched) +
                        "; set OXINFER_PIPELINES_DIR)");
}

std::vector<PipelineFile> list_pipelines(const std::vector<fs::path>& dirs) {
  std::map<std::string, PipelineFile> found;
  for (const fs::path& d : dirs) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(d, ec))
      if (entry.path().extension() == ".pipeline") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      if (found.count(f.stem().string())) continue;
      found.emplace(f.stem().string(), load_pipeline_file(f));
    }
  }
  std::vector<PipelineFile> out;
  for (auto& [name, p] : found) out.push_back(std::move(p));
  return out;
}

}  // namespace oxi::cli
