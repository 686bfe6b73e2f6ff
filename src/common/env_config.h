// Every environment variable Vigil reads, read and validated here once per process.
// Bad values make EnvConfig::Load fail with a message naming the variable, the value and the
// accepted range (HCCL reports this as EI0001). The effective values are echoed once to the
// run log by the log layer, in HCCL's form: "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M".
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/op_retry_config.h"

namespace vigil {

struct EnvConfig {
  // HCCL's variables.
  uint32_t exec_timeout_s = 1836;       // HCCL_EXEC_TIMEOUT, [0, 2^31-1], 0 = wait forever
  uint32_t connect_timeout_s = 120;     // HCCL_CONNECT_TIMEOUT, [1, 7200] (HCCL: [120, 7200])
  uint32_t buffsize_mb = 200;           // HCCL_BUFFSIZE, >= 1
  bool entry_log = false;               // HCCL_ENTRY_LOG_ENABLE, 0/1
  bool diagnose_enable = false;         // HCCL_DIAGNOSE_ENABLE, 0/1
  uint32_t qps_per_connection = 1;      // HCCL_RDMA_QPS_PER_CONNECTION, [1, 32]
  uint32_t rdma_timeout = 20;           // HCCL_RDMA_TIMEOUT, [5, 20]: 4.096us * 2^v per retry
  uint32_t rdma_retry_cnt = 7;          // HCCL_RDMA_RETRY_CNT, [1, 7]
  std::string algo;                     // HCCL_ALGO, "" = automatic
  // HCCL_DETERMINISTIC: false (0), true (1) or strict (2), the default of hcclDeterministic.
  // Vigil's reductions always sum in a fixed order, so every value gives repeatable results.
  uint32_t deterministic = 0;
  std::string if_ip;                    // HCCL_IF_IP
  std::string socket_ifname;            // HCCL_SOCKET_IFNAME
  uint32_t if_base_port = 60000;        // HCCL_IF_BASE_PORT, [0, 65504]; 0 = kernel-chosen port
  bool whitelist_disable = true;        // HCCL_WHITELIST_DISABLE
  // HCCL_DFS_CONFIG "key:value,..." (HCCL's syntax): connection_fault_detection_time (0 or
  // [20, 7200] s), cluster_heartbeat on/off, stuck_detection on/off, inconsistent_check on/off,
  // task_monitor_interval [0, 7200000] ms. Vigil checks op consistency by default (HCCL: off).
  std::string dfs_config;
  uint32_t connection_fault_detection_s = 20;
  // HCCL_OP_RETRY_ENABLE ("L0:0,L1:0,L2:0") and HCCL_OP_RETRY_PARAMS
  // ("MaxCnt:1,HoldTime:5000,IntervalTime:1000"): see common/op_retry_config.h.
  OpRetryConfig op_retry;
  bool cluster_heartbeat = true;
  bool stuck_detection = true;
  bool inconsistent_check = true;
  // CANN log variables.
  std::string log_path;                 // ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, else $HOME/ascend/log
  int global_log_level = 3;             // ASCEND_GLOBAL_LOG_LEVEL, [0, 4]: 0 debug .. 3 error, 4 null
  bool slog_print_to_stdout = false;    // ASCEND_SLOG_PRINT_TO_STDOUT
  // Vigil's own.
  uint32_t device_count = 8;            // VIGIL_DEVICE_COUNT, [1, 1024]
  uint64_t device_memory = 0;           // VIGIL_DEVICE_MEMORY, bytes with K/M/G suffix; 0 = unlimited
  uint64_t log_file_max_bytes = 20ull << 20;  // VIGIL_LOG_FILE_SIZE, plog rotation size
  uint32_t heartbeat_lost_s = 30;       // VIGIL_HEARTBEAT_LOST_TIMEOUT, [1, 3600]
  bool heartbeat_enable = true;         // VIGIL_HEARTBEAT, 0/1
  std::string transport;                // VIGIL_TRANSPORT: "" (auto), "shm", "tcp" (force tcp on one host)
  std::string fault;                    // VIGIL_FAULT: fault-injection spec, read by the layer it names
  // VIGIL_SHM_SINGLE_COPY, 0/1: shm links let the receiver read large messages straight from the
  // sender's buffer (process_vm_readv) when the kernel allows it; 0 = always through the rings.
  bool shm_single_copy = true;
  // VIGIL_TCP_LOOPBACK_SOCKBUF, bytes (K/M suffix): SO_SNDBUF/SO_RCVBUF of the data sockets of a
  // TCP link whose two ends share a host (raised to 64K at least); 0 (the default) = the kernel's
  // autotuning. Links between hosts always autotune.
  uint64_t tcp_loopback_sockbuf = 0;
  // VIGIL_TCP_EAGER, 0/1: an op's first data on a TCP link (transport::kTcpEagerWindow) goes out
  // with its header, before the peer shows it is in the op (an abandoned op is taken back over
  // the control connection); 0 = the data waits for the peer's op header.
  bool tcp_eager = true;
  // VIGIL_JOB_KEY: the job key (bootstrap/job_key.h), 32 hex digits; "" = none given. Echoed as
  // "(set)", never by value.
  std::string job_key;

  struct Echo {
    std::string name;
    std::string value;   // effective value as printed, e.g. "200" (unit appended by the line)
    bool from_env;       // "set by environment" vs "set by default"
    std::string unit;    // "M", "s" or ""
  };
  std::vector<Echo> echoes;  // one per variable, in a stable order

  // Every variable that failed validation (its field keeps the default). The fields are the
  // arguments of EI0001 as ScreenError("EI0001", {value, name, expected}) takes them.
  struct Invalid {
    std::string name;
    std::string value;
    std::string expected;  // "an integer in [1, 7200]"
  };
  std::vector<Invalid> invalid;

  // Reads the process environment. On a bad value returns false and sets *error to
  // "HCCL_BUFFSIZE value [abc] is invalid: expected an integer >= 1" style text naming the variable.
  bool Load(std::string* error);
};

namespace env_detail {
// Set once the environment is loaded; it stays the same object (a reload re-reads into it).
// Env() runs several times per op, from other libraries too: inline, it is two loads instead of
// a call through the PLT and a function-local static's guard.
extern std::atomic<const EnvConfig*> g_loaded;
extern std::atomic<const std::string*> g_error;
const EnvConfig& LoadEnv();
const std::string& LoadEnvError();
}  // namespace env_detail

// The process-wide configuration, loaded on first use. If the environment is invalid, Get()
// still returns defaults for the bad variables and LoadError() holds the message.
inline const EnvConfig& Env() {
  const EnvConfig* env = env_detail::g_loaded.load(std::memory_order_acquire);
  return env != nullptr ? *env : env_detail::LoadEnv();
}
inline const std::string& EnvLoadError() {
  const std::string* error = env_detail::g_error.load(std::memory_order_acquire);
  return error != nullptr ? *error : env_detail::LoadEnvError();
}
// Tests only: re-read the environment.
void ReloadEnvForTesting();

// "HCCL_BUFFSIZE set by environment to [200]M" — the text after "[HCCL_ENV] ".
std::string FormatEnvEcho(const EnvConfig::Echo& echo);

}  // namespace vigil
