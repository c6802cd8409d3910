#include "lib/hub/repo_spec.h"

#include <algorithm>
#include <cctype>

#include "lib/core/error.h"

namespace oxi::hub {

namespace {

// The Hub allows letters, digits, '-', '_' and '.' in org and repo names.
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool is_valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 96 && name != "." && name != ".." &&
         name.find("..") == std::string_view::npos &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

// A revision becomes a file name under refs/ and a URL component: no "..", no empty parts.
std::optional<std::string> revision_problem(std::string_view revision) {
  if (revision.empty()) return "empty revision after '@'";
  if (revision.front() == '/' || revision.back() == '/')
    return "revision must not start or end with '/'";
  size_t start = 0;
  while (start <= revision.size()) {
    const size_t end = std::min(revision.find('/', start), revision.size());
    const std::string_view part = revision.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return "invalid revision '" + std::string(revision) + "'";
    start = end + 1;
  }
  for (char c : revision) {
    if (std::iscntrl(static_cast<unsigned char>(c)) || c == ' ' || c == '\\' || c == ':') {
      return "invalid character in revision '" + std::string(revision) + "'";
    }
  }
  return std::nullopt;
}

std::optional<std::string> quant_problem(std::string_view quant) {
  if (quant.empty()) return "empty quant tag after ':'";
  const bool ok = std::all_of(quant.begin(), quant.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (!ok) return "invalid quant tag '" + std::string(quant) + "'";
  return std::nullopt;
}

// The parse itself: the value, or the problem that makes `spec` not a repo spec.
struct ParseOutcome {
  std::optional<RepoSpec> spec;
  std::string problem;
};

ParseOutcome parse(std::string_view text) {
  RepoSpec spec;
  std::string_view rest = text;
  std::string_view revision, quant;
  if (const size_t at = rest.find('@'); at != std::string_view::npos) {
    revision = rest.substr(at + 1);
    rest = rest.substr(0, at);
    // "org/name@rev:QUANT": the quant may follow the revision.
    if (const size_t colon = revision.find(':'); colon != std::string_view::npos) {
      quant = revision.substr(colon + 1);
      revision = revision.substr(0, colon);
      if (revision.empty()) return {std::nullopt, "empty revision after '@'"};
    }
    if (auto problem = revision_problem(revision)) return {std::nullopt, *problem};
    spec.revision = std::string(revision);
  }
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    if (!quant.empty()) return {std::nullopt, "two quant tags"};
    quant = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (quant.empty()) return {std::nullopt, "empty quant tag after ':'"};
  }
  if (!quant.empty() || text.find(':') != std::string_view::npos) {
    if (auto problem = quant_problem(quant)) return {std::nullopt, *problem};
    spec.quant = std::string(quant);
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.find('/', slash + 1) != std::string_view::npos) {
    return {std::nullopt, "expected a repo id of the form org/name"};
  }
  if (!is_valid_name(rest.substr(0, slash)) || !is_valid_name(rest.substr(slash + 1))) {
    return {std::nullopt,
            "invalid repo id '" + std::string(rest) + "' (letters, digits, '-', '_' and '.' only)"};
  }
  spec.repo_id = std::string(rest);
  return {spec, ""};
}

}  // namespace

std::string RepoSpec::to_string() const {
  std::string text = repo_id;
  if (!quant.empty()) text += ":" + quant;
  if (revision != "main") text += "@" + revision;
  return text;
}

RepoSpec parse_repo_spec(std::string_view spec) {
  ParseOutcome outcome = parse(spec);
  if (!outcome.spec) {
    throw Error(spec, outcome.problem + " (expected org/name[:QUANT][@revision])");
  }
  return *outcome.spec;
}

std::optional<RepoSpec> try_parse_repo_spec(std::string_view spec) {
  return parse(spec).spec;
}

bool is_commit_hash(std::string_view revision) {
  return revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace oxi::hub
