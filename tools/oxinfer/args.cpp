#include "tools/oxinfer/args.h"

#include <cmath>

#include <cstdio>
#include <sstream>

namespace oxi::cli {

bool ParsedArgs::has(const std::string& name) const {
  return values_.count(name) > 0;
}

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  auto range = values_.equal_range(name);
  if (range.first == range.second) return std::nullopt;
  return std::prev(range.second)->second;  // the last occurrence wins
}

std::string ParsedArgs::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

long long ParsedArgs::get_int(const std::string& name, long long fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    long long x = std::stoll(*v, &used);
    if (used != v->size()) throw std::invalid_argument("trailing");
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " expects an integer, got '" + *v + "'");
  }
}

double ParsedArgs::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    double x = std::stod(*v, &used);
    if (used != v->size()) throw std::invalid_argument("trailing");
    if (!std::isfinite(x)) throw std::invalid_argument("not finite");  // "nan", "inf"
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " expects a finite number, got '" + *v + "'");
  }
}

std::vector<std::string> ParsedArgs::get_all(const std::string& name) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

ArgParser::ArgParser(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)) {
  flag("help", "show this help", "h");
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help,
                           const std::string& short_name) {
  specs_.push_back({name, short_name, "", help, false});
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, const std::string& metavar,
                             const std::string& help, const std::string& short_name) {
  specs_.push_back({name, short_name, metavar, help, true});
  return *this;
}

ArgParser& ArgParser::threads_option() {
  return option("threads", "N", "worker threads (default: all cores)", "t");
}

const ArgParser::Spec* ArgParser::find(const std::string& token) const {
  for (const Spec& s : specs_) {
    if (token == "--" + s.name || (!s.short_name.empty() && token == "-" + s.short_name)) return &s;
  }
  return nullptr;
}

ParsedArgs ArgParser::parse(const std::vector<std::string>& argv) const {
  ParsedArgs out;
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string token = argv[i];
    if (only_positional || token == "-" || token.size() < 2 || token[0] != '-' ||
        (token[1] >= '0' && token[1] <= '9')) {
      out.positional_.push_back(token);
      continue;
    }
    if (token == "--") {
      only_positional = true;
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = token.find('='); token.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = token.substr(eq + 1);
      token = token.substr(0, eq);
    }
    const Spec* spec = find(token);
    if (!spec)
      throw UsageError("unknown option " + token + " (see oxinfer " + command_ + " --help)");
    if (spec->name == "help") {
      std::fputs(help_text().c_str(), stdout);
      throw HelpShown{};
    }
    if (!spec->takes_value) {
      if (inline_value) throw UsageError(token + " takes no value");
      out.values_.emplace(spec->name, "");
      continue;
    }
    if (inline_value) {
      out.values_.emplace(spec->name, *inline_value);
    } else {
      if (i + 1 >= argv.size()) throw UsageError(token + " needs a value (" + spec->metavar + ")");
      out.values_.emplace(spec->name, argv[++i]);
    }
  }
  return out;
}

std::string ArgParser::help_text() const {
  std::ostringstream os;
  os << "usage: " << usage_ << "\n\n" << summary_ << "\n\noptions:\n";
  for (const Spec& s : specs_) {
    std::string left = "  ";
    left += s.short_name.empty() ? "    " : "-" + s.short_name + ", ";
    left += "--" + s.name;
    if (s.takes_value) left += " " + s.metavar;
    if (left.size() < 30)
      left.resize(30, ' ');
    else
      left += "  ";
    os << left << s.help << "\n";
  }
  return os.str();
}

}  // namespace oxi::cli
