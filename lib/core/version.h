#pragma once

namespace oxi {

// The library version, e.g. "0.1.0".
const char* version() noexcept;

}  // namespace oxi
