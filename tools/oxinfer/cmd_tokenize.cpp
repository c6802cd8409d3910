#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_tokenize(const Argv&) { throw oxi::Error("oxinfer tokenize", "not implemented yet"); }

}  // namespace oxi::cli
