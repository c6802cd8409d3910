// oxinfer tokenize -m MODEL [--no-bos] [--special] TEXT|-: the token ids of a text.
#include <cstdio>
#include <string>

#include "lib/core/error.h"
#include "lib/tokenizer/load.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {

int run_tokenize(const Argv& argv) {
  ArgParser parser("tokenize", "oxinfer tokenize -m MODEL [--no-bos] TEXT|-",
                   "Print the token ids of TEXT (or of standard input for -), space separated.\n"
                   "MODEL: a GGUF file, a tokenizer.json, or a directory holding one.");
  parser.option("model", "MODEL", "the model whose tokenizer to use", "m");
  parser.flag("no-bos", "do not add the begin-of-sequence token the model asks for");
  parser.flag("special", "parse special-token text such as <|im_start|> as those tokens");
  parser.flag("pieces", "print each token's id and text, one per line");
  const ParsedArgs args = parser.parse(argv);

  const auto model = args.get("model");
  if (!model) throw UsageError("-m MODEL is required");
  if (args.positional().size() != 1)
    throw UsageError("expected one TEXT argument (or - for stdin)");
  std::string text = args.positional()[0];
  if (text == "-") text = read_stdin();

  const tokenizer::Tokenizer tok = tokenizer::load(*model);
  const bool add_bos = tok.add_bos() && !args.flag("no-bos");
  const std::vector<int32_t> ids = tok.encode(text, add_bos, args.flag("special"));
  if (args.flag("pieces")) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, tok.token_piece(id).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace oxi::cli
