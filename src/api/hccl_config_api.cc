// HcclCommConfig reading (hccl_config.h), and the configuration calls of hccl/hccl_comm.h:
// HcclSetConfig, HcclGetConfig, HcclGetCommConfigCapability, HcclConfigGetInfo.
#include <atomic>
#include <cstddef>
#include <cstring>

#include "api/hccl_api_util.h"
#include "api/hccl_config.h"
#include "common/env_config.h"
#include "log/plog.h"

using vigil::api::ArgError;

namespace vigil::api {

namespace {

// HcclSetConfig(HCCL_DETERMINISTIC)'s value; unset: HCCL_DETERMINISTIC's.
constexpr uint32_t kUnset = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
std::atomic<uint32_t> g_deterministic{kUnset};

struct ConfigHeader {
  size_t size;
  uint32_t magic;
  uint32_t version;
  uint64_t reserved;
};
static_assert(sizeof(ConfigHeader) == HCCL_COMM_CONFIG_INFO_BYTES);

// sizeof(HcclCommConfig) in Vigil's header before it followed HCCL's version 11 layout.
constexpr size_t kEarlierVigilSize = 320;

std::string Bounded(const char* text, size_t max) { return std::string(text, strnlen(text, max)); }

}  // namespace

uint32_t ProcessDeterministic() {
  const uint32_t set = g_deterministic.load();
  return set != kUnset ? set : Env().deterministic;
}

HcclResult ApplyCommConfig(const char* api, const HcclCommConfig* user,
                           comm::CommOptions* options) {
  options->deterministic = ProcessDeterministic();
  if (user == nullptr) return HCCL_SUCCESS;
  ConfigHeader header;
  memcpy(&header, user, sizeof(header));
  if (header.magic != HCCL_COMM_CONFIG_MAGIC_WORD) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("config magic word[{:#x}] is invalid: call HcclCommConfigInit "
                                "first (expected {:#x})",
                                header.magic, HCCL_COMM_CONFIG_MAGIC_WORD));
  }
  if (header.size < sizeof(ConfigHeader)) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("config size[{}] is invalid: expected >= {} (call "
                                "HcclCommConfigInit first)",
                                header.size, sizeof(ConfigHeader)));
  }
  if (header.version != HCCL_COMM_CONFIG_VERSION || header.size != sizeof(HcclCommConfig)) {
    HCCL_RUN_WARNING("[{}]config version[{}] size[{}] differs from this library's version[{}] "
                     "size[{}]: only the fields both know are read",
                     api, header.version, header.size, HCCL_COMM_CONFIG_VERSION,
                     sizeof(HcclCommConfig));
  }
  // The fields the caller's config holds, over "not set" values for the rest.
  HcclCommConfig c;
  memset(&c, 0, sizeof(c));
  HcclCommConfigInit(&c);
  memcpy(&c, user, std::min(header.size, sizeof(HcclCommConfig)));
  if (header.version == HCCL_COMM_CONFIG_VERSION && header.size == kEarlierVigilSize) {
    // Vigil's earlier header: version 11 but 320 bytes, hcclExecTimeOut a uint32 at 312 where
    // aclGraphZeroCopyEnable now is. Read it as that layout, and no version 7+ field else.
    uint32_t exec_timeout = 0;
    memcpy(&exec_timeout, reinterpret_cast<const char*>(user) + 312, sizeof(exec_timeout));
    c.aclGraphZeroCopyEnable = 0;
    c.hcclExecTimeOut = static_cast<int32_t>(exec_timeout);
    header.size = offsetof(HcclCommConfig, hcclExecTimeOut) + sizeof(c.hcclExecTimeOut);
  }
  auto present = [&](uint32_t version, size_t end) {
    return header.version >= version && end <= header.size;
  };
#define VIGIL_FIELD_END(f) (offsetof(HcclCommConfig, f) + sizeof(c.f))

  if (present(1, VIGIL_FIELD_END(hcclBufferSize)) &&
      c.hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET) {
    if (c.hcclBufferSize == 0) {
      return ArgError(api, HCCL_E_PARA, "config hcclBufferSize[0] is invalid: expected >= 1 (MB)");
    }
    options->buffsize_mb = c.hcclBufferSize;
  }
  if (present(1, VIGIL_FIELD_END(hcclDeterministic)) &&
      c.hcclDeterministic != HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET) {
    if (c.hcclDeterministic > 2) {
      return ArgError(api, HCCL_E_PARA,
                      fmt::format("config hcclDeterministic[{}] is invalid: expected 0, 1 or 2",
                                  c.hcclDeterministic));
    }
    options->deterministic = c.hcclDeterministic;
  }
  if (present(2, VIGIL_FIELD_END(hcclCommName))) {
    options->user_name = Bounded(c.hcclCommName, COMM_NAME_MAX_LENGTH);
  }
  if (present(3, VIGIL_FIELD_END(hcclUdi))) options->udi = Bounded(c.hcclUdi, UDI_MAX_LENGTH);
  if (present(4, VIGIL_FIELD_END(hcclOpExpansionMode))) {
    options->op_expansion_mode = c.hcclOpExpansionMode;
  }
  if (present(7, VIGIL_FIELD_END(aclGraphZeroCopyEnable)) && c.aclGraphZeroCopyEnable > 1) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("config aclGraphZeroCopyEnable[{}] is invalid: expected 0 or 1",
                                c.aclGraphZeroCopyEnable));
  }
  if (present(8, VIGIL_FIELD_END(hcclExecTimeOut)) &&
      c.hcclExecTimeOut != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET) {
    if (c.hcclExecTimeOut < 0) {
      return ArgError(api, HCCL_E_PARA,
                      fmt::format("config hcclExecTimeOut[{}] is invalid: expected seconds in "
                                  "[0, {}] (0 = never) or HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET",
                                  c.hcclExecTimeOut, INT32_MAX));
    }
    options->exec_timeout_s = static_cast<uint32_t>(c.hcclExecTimeOut);
  }
  if (present(8, VIGIL_FIELD_END(hcclAlgo))) {
    options->algo = Bounded(c.hcclAlgo, HCCL_COMM_ALGO_MAX_LENGTH);
    if (!options->algo.empty() && options->algo != Env().algo) {
      HCCL_RUN_INFO("[{}]config hcclAlgo[{}]: the communicator's ops choose their algorithm by "
                    "it instead of HCCL_ALGO[{}]",
                    api, options->algo, Env().algo);
    }
  }
  // Op retry per communicator, over HCCL_OP_RETRY_ENABLE / HCCL_OP_RETRY_PARAMS.
  if (present(8, VIGIL_FIELD_END(hcclRetryEnable)) && c.hcclRetryEnable[0] != '\0') {
    const std::string text = Bounded(c.hcclRetryEnable, HCCL_COMM_RETRY_ENABLE_MAX_LENGTH);
    const std::string expected = ParseOpRetryEnable(text, &options->retry);
    if (!expected.empty()) {
      return ArgError(api, HCCL_E_PARA,
                      fmt::format("config hcclRetryEnable[{}] is invalid: expected {}", text,
                                  expected));
    }
  }
  if (present(8, VIGIL_FIELD_END(hcclRetryParams)) && c.hcclRetryParams[0] != '\0') {
    const std::string text = Bounded(c.hcclRetryParams, HCCL_COMM_RETRY_PARAMS_MAX_LENGTH);
    const std::string expected = ParseOpRetryParams(text, &options->retry);
    if (!expected.empty()) {
      return ArgError(api, HCCL_E_PARA,
                      fmt::format("config hcclRetryParams[{}] is invalid: expected {}", text,
                                  expected));
    }
  }
  if (present(10, VIGIL_FIELD_END(hcclSymWinMaxMemSizePerRank))) {
    if (c.hcclSymWinMaxMemSizePerRank == 0) {
      return ArgError(api, HCCL_E_PARA,
                      "config hcclSymWinMaxMemSizePerRank[0] is invalid: expected >= 1 (GB)");
    }
    options->sym_win_max_gb = c.hcclSymWinMaxMemSizePerRank;
  }
#undef VIGIL_FIELD_END
  HCCL_RUN_INFO("[{}]comm config: version[{}], size[{}], bufferSize[{}]M, deterministic[{}], "
                "commName[{}], udi[{}], opExpansionMode[{}] (ops run on the host), "
                "execTimeOut[{}]s, retryEnable[{}], retryParams[{}], symWinMaxMemSizePerRank[{}]G",
                api, header.version, header.size, options->buffsize_mb, options->deterministic,
                options->user_name, options->udi, options->op_expansion_mode,
                options->exec_timeout_s, options->retry.EnableText(), options->retry.ParamsText(),
                options->sym_win_max_gb);
  return HCCL_SUCCESS;
}

}  // namespace vigil::api

extern "C" {

HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue) {
  if (config != HCCL_DETERMINISTIC) {
    return ArgError("HcclSetConfig", HCCL_E_PARA,
                    fmt::format("config[{}] is invalid: expected HCCL_DETERMINISTIC (0)",
                                static_cast<int>(config)));
  }
  if (configValue.value < 0 || configValue.value > 2) {
    return ArgError("HcclSetConfig", HCCL_E_PARA,
                    fmt::format("HCCL_DETERMINISTIC value[{}] is invalid: expected 0 (off), 1 "
                                "(on) or 2 (strict)",
                                configValue.value));
  }
  vigil::api::g_deterministic.store(static_cast<uint32_t>(configValue.value));
  HCCL_RUN_INFO("HcclSetConfig: HCCL_DETERMINISTIC set to [{}] for communicators made from now "
                "on (reductions here always run in a fixed order)",
                configValue.value);
  return HCCL_SUCCESS;
}

HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue* configValue) {
  if (configValue == nullptr) {
    return ArgError("HcclGetConfig", HCCL_E_PTR, "ptr [configValue] is nullptr");
  }
  if (config != HCCL_DETERMINISTIC) {
    return ArgError("HcclGetConfig", HCCL_E_PARA,
                    fmt::format("config[{}] is invalid: expected HCCL_DETERMINISTIC (0)",
                                static_cast<int>(config)));
  }
  configValue->value = static_cast<int32_t>(vigil::api::ProcessDeterministic());
  return HCCL_SUCCESS;
}

uint32_t HcclGetCommConfigCapability(void) {
  // Every item before HCCL_COMM_CONFIG_RESERVED is read (hccl_config.h).
  return static_cast<uint32_t>(HCCL_COMM_CONFIG_RESERVED);
}

HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType, uint32_t infoLen,
                             void* info) {
  constexpr const char* kApi = "HcclConfigGetInfo";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (info == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [info] is nullptr");
  switch (cfgType) {
    case HCCL_CONFIG_TYPE_OP_EXPANSION_MODE: {
      if (infoLen < sizeof(HcclConfigTypeOpExpansionMode)) {
        return ArgError(kApi, HCCL_E_PARA,
                        fmt::format("infoLen[{}] is too small: expected >= {}", infoLen,
                                    sizeof(HcclConfigTypeOpExpansionMode)));
      }
      // Every op is expanded and run by host threads.
      const HcclConfigTypeOpExpansionMode mode = HCCL_OP_EXPANSION_MODE_HOST;
      memcpy(info, &mode, sizeof(mode));
      return HCCL_SUCCESS;
    }
    case HCCL_CONFIG_TYPE_HCCL_ALGO: {
      const std::string& algo = c->options().algo.empty() ? vigil::Env().algo : c->options().algo;
      if (infoLen < algo.size() + 1) {
        return ArgError(kApi, HCCL_E_PARA,
                        fmt::format("infoLen[{}] is too small for the algorithm setting [{}]: "
                                    "expected >= {}",
                                    infoLen, algo, algo.size() + 1));
      }
      memcpy(info, algo.c_str(), algo.size() + 1);
      return HCCL_SUCCESS;
    }
    default:
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("cfgType[{}] is invalid: expected HCCL_CONFIG_TYPE_OP_EXPANSION_"
                                  "MODE (0) or HCCL_CONFIG_TYPE_HCCL_ALGO (1)",
                                  static_cast<int>(cfgType)));
  }
}

}  // extern "C"
