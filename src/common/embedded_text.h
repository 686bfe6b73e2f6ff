// Data files compiled into the library (cmake/EmbedText.cmake): name, text and its byte size.
#pragma once

#include <cstddef>

namespace vigil::embedded {

struct EmbeddedText {
  const char* name;  // file name, without its folder
  const char* text;
  size_t size;
};

}  // namespace vigil::embedded
