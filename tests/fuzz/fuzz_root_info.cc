// The 4108-byte HcclRootInfo a rank receives from its launcher (or any file or socket) decoded
// by DecodeRootInfo. Mode byte bit 0: the payload's checksum is fixed up before decoding, so
// the fuzzer reaches the payload's fields and not only the checksum test.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/root_info.h"
#include "bootstrap/wire.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil;
  const fuzz::Input in = fuzz::Split(data, size);
  HcclRootInfo info;
  std::memset(&info, 0, sizeof(info));
  if (in.size > 0) {
    std::memcpy(info.internal, in.data,
                in.size < sizeof(info.internal) ? in.size : sizeof(info.internal));
  }
  constexpr size_t kHeader = 16;  // magic, version, reserved, length, checksum
  if (in.mode & 1) {
    wire::Reader h(info.internal, kHeader);
    (void)h.U32();
    (void)h.U32();
    const uint32_t len = h.U32();
    if (len <= sizeof(info.internal) - kHeader) {
      const uint32_t sum = wire::Fnv1a(info.internal + kHeader, len);
      for (int i = 0; i < 4; ++i) info.internal[12 + i] = static_cast<char>(sum >> (8 * i));
    }
  }
  bootstrap::RootInfo out;
  std::string error;
  if (bootstrap::DecodeRootInfo(info, &out, &error) != HCCL_SUCCESS) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(out.port != 0 && !out.identifier.empty());
  return 0;
}
