// Root info and rendezvous. HcclGetRootInfo starts a rendezvous server on this host (port from
// HCCL_IF_BASE_PORT) and writes {magic, version, host ip, port, identifier, checksum} into the
// opaque HcclRootInfo; the identifier has HCCL's form "IP%IFNAME_PORT_0_TIMESTAMPus".
// Every rank (the root's own included) connects to that server, sends its RankInfo; the server
// waits up to HCCL_CONNECT_TIMEOUT for all nRanks, checks them (duplicate rank ids, nRanks and
// comm-wide parameters that differ → EI0005) and sends every rank the full table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/job_key.h"
#include "hccl/hccl_types.h"

namespace vigil::bootstrap {

struct RootInfo {
  std::string host_ip;
  std::string ifname;
  uint16_t port = 0;
  std::string identifier;
  // The job key every connection of this communicator proves (job_key.h). Carried inside the
  // root info's bytes; never logged.
  auth::JobKey key;
};

// What every rank tells the others at init.
struct RankInfo {
  uint32_t rank = 0;
  uint32_t nranks = 0;
  std::string host_ip;   // where its data listener is
  std::string host_id;   // same value = same machine (shared memory possible)
  uint16_t data_port = 0;
  uint32_t pid = 0;
  int32_t device = 0;
  // Comm-wide parameters that must agree (EI0005 names the first that differs).
  uint32_t buffsize_mb = 0;
  uint32_t exec_timeout_s = 0;
  std::string transport;  // VIGIL_TRANSPORT
  // HCCL_DFS_CONFIG inconsistent_check: "on"/"off". Ranks that disagree would answer one op
  // mismatch two ways (an early EI0005 on some, a timeout on others), so it is a comm-wide
  // parameter like the others.
  std::string op_check;
  // The process's heartbeat (maintenance) listener on host_ip; 0 = heartbeat off. Filled by
  // Rendezvous from the provider below when the caller left it 0.
  uint16_t maint_port = 0;
};

// The heartbeat (dfx, a higher layer) registers how to get its listener's port, starting the
// listener on first use; Rendezvous then advertises it in every rank's RankInfo. Thread-safe.
using MaintenancePortProvider = uint16_t (*)(const std::string& host_ip);
void SetMaintenancePortProvider(MaintenancePortProvider provider);

// Starts the rendezvous server thread and fills *info; the root info carries the process's job
// key (auth::ProcessJobKey). EI0019 (screen + log) and HCCL_E_UNAVAIL when no port in the allowed
// range can be bound; HCCL_E_PARA when VIGIL_JOB_KEY is malformed.
// `key`: the key to carry instead (a shrink keeps its communicator's).
HcclResult CreateRootInfo(HcclRootInfo* out, RootInfo* info, const auth::JobKey* key = nullptr);
// HCCL_E_PARA with *error naming what is wrong when the bytes are not a root info. The key it
// carries is adopted by the process (auth::AdoptJobKey).
HcclResult DecodeRootInfo(const HcclRootInfo& in, RootInfo* info, std::string* error);

// Joins the rendezvous: sends `self`, receives all ranks ordered by rank.
// HCCL_E_TIMEOUT (EI0006, naming the ranks that never arrived) after HCCL_CONNECT_TIMEOUT;
// HCCL_E_PARA (EI0005) on a parameter disagreement; HCCL_E_PARA on duplicate rank ids, a rank
// out of range or a root info of another communicator. On failure this function itself logs
// the ERROR line and raises the screen error (EI0006 / EI0005) for this rank; *error holds the
// same text for the caller's own line. Waits at most HCCL_CONNECT_TIMEOUT to reach the root plus
// a grace of min(HCCL_CONNECT_TIMEOUT, 20 s) for its answer (the root answers a timeout first).
// The root's server waits HCCL_CONNECT_TIMEOUT from the first rank's arrival.
HcclResult Rendezvous(const RootInfo& root, const RankInfo& self, std::vector<RankInfo>* all,
                      std::string* error);

// Rank table (HcclCommInitClusterInfo), version 1.0 and 2.0 JSON.
struct RankTableEntry {
  uint32_t rank = 0;
  std::string server_id;  // host IP
  int32_t device_id = 0;
  std::string device_ip;
};
struct RankTable {
  std::string version;
  std::vector<RankTableEntry> ranks;  // ordered by rank id
};
// HCCL_E_PARA with *error naming the file and the field when malformed (EI0004/EI0014/EI0017;
// raised by the caller). Version 2.0 is read in the 1.0 shape or as {status, version, rank_count,
// rank_list:[{rank_id, device_id, server_id or host_ip, device_ip?, level_list?}]}.
HcclResult LoadRankTable(const std::string& path, RankTable* table, std::string* error);
// The same on text already read (`path` only names it in errors). Host names in server_id go to
// `resolve` (true and the IPv4 address when it knows the name) instead of getaddrinfo when set:
// tests and fuzzing, which must not query DNS.
using HostResolver = bool (*)(const std::string& name, std::string* ipv4);
HcclResult ParseRankTable(const std::string& text, const std::string& path, RankTable* table,
                          std::string* error, HostResolver resolve = nullptr);
// The rank's server_id when it is an IPv4 address this process can listen on (its host), else "":
// the address the rank's links listen on in a rank-table job (unless HCCL_IF_IP says otherwise).
std::string RankTableSelfIp(const RankTable& table, uint32_t rank);
// The root info every rank of a rank-table job agrees on without exchanging it: rank 0's
// server_id and HCCL_IF_BASE_PORT (rank 0 serves it), identifier "hccl_world_group" unless named,
// and the key of VIGIL_JOB_KEY (none without it: auth::RankTableJobKey).
// When my_rank is 0 this also starts the rendezvous server on that address (EI0019 + HCCL_E_UNAVAIL
// when the port is taken). HCCL_E_PARA when HCCL_IF_BASE_PORT is 0 or server_id is not IPv4.
HcclResult RootInfoFromRankTable(const RankTable& table, uint32_t my_rank, RootInfo* root,
                                 std::string* error);

}  // namespace vigil::bootstrap
