#include "lib/core/version.h"

namespace oxi {

const char* version() noexcept {
  return OXI_VERSION;
}

}  // namespace oxi
