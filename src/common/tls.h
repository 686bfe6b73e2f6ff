// A thread_local's address, looked up once per call. In a shared library each access to a
// thread_local calls __tls_get_addr, and GCC calls it again after every atomic or opaque call
// (it cannot prove the address unchanged); hiding the pointer from the optimizer once keeps it
// in a register for the rest of the caller. For per-op hot paths only.
#pragma once

namespace vigil {

template <typename T>
inline T& TlsOnce(T& tls) {
  T* p = &tls;
  asm("" : "+r"(p));
  return *p;
}

}  // namespace vigil
