// VigilCommShrink (vigil/ext.h): the survivors of a communicator agree on whom to exclude
// (dfx/agreement.h) and build a communicator of themselves from the root info the agreement
// hands over. Logged in the run log as HCCL logs a communicator's init, into the flight recorder,
// and into the heartbeat's view (vigil health).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <set>
#include <thread>

#include "api/hccl_api_util.h"
#include "api/hccl_group.h"
#include "api/hccl_init.h"
#include "bootstrap/root_info.h"
#include "common/env_config.h"
#include "dfx/agreement.h"
#include "dfx/flight_recorder.h"
#include "dfx/heartbeat.h"
#include "log/plog.h"
#include "vigil/ext.h"

using vigil::api::ArgError;

namespace {

constexpr const char* kApi = "VigilCommShrink";
constexpr auto kAbortDrain = std::chrono::seconds(10);  // aborted ops end at their next wait

using Millis = std::chrono::milliseconds;

Millis Since(vigil::SteadyClock::time_point t) {
  return std::chrono::duration_cast<Millis>(vigil::SteadyClock::now() - t);
}

// Waits until this rank's ops on `c` have ended, at most `bound`.
bool Drain(const vigil::comm::Communicator& c, std::chrono::seconds bound) {
  const auto until = vigil::SteadyClock::now() + bound;
  while (c.in_flight() != 0) {
    if (vigil::SteadyClock::now() >= until) return false;
    std::this_thread::sleep_for(Millis(5));
  }
  return true;
}

// The agreement failed: HCCL_E_PARA, one ERROR line, and EI0005 on screen naming the views.
HcclResult AgreementFailed(const vigil::comm::Communicator& c,
                           const vigil::dfx::AgreementOutcome& out) {
  HCCL_ERROR(
      "[Shrink][InvalidArgument][{}]communicator[{}] rank[{}] round[{}]: the survivors did "
      "not agree on the ranks to exclude, no communicator was built: {}; views heard: "
      "{}; after {} ms, return HCCL_E_PARA",
      kApi, c.identifier(), c.rank(), out.round, out.error, vigil::dfx::ViewsText(out.views),
      out.elapsed.count());
  std::string local, remote;
  for (const vigil::dfx::ShrinkView& v : out.views) {
    std::string& to = v.rank == c.rank() ? local : remote;
    if (!to.empty()) to += "; ";
    to += fmt::format("rank {} excludes {}", v.rank, vigil::dfx::RankSetText(v.exclude));
  }
  if (remote.empty()) remote = "no other view heard";
  vigil::log::ScreenError("EI0005", {kApi, c.identifier(), "excludeRanks", local, remote},
                          {fmt::format("VigilCommShrink on communicator {} rank {}: {}",
                                       c.identifier(), c.rank(), out.error)});
  return HCCL_E_PARA;
}

}  // namespace

extern "C" {

HcclResult VigilCommShrink(HcclComm comm, const uint32_t* excludeRanks, uint32_t excludeCount,
                           const HcclCommConfig* config, HcclComm* newComm, uint32_t flags) {
  const auto start = vigil::SteadyClock::now();
  if (HcclResult rc = vigil::api::EnsureProcessReady(kApi); rc != HCCL_SUCCESS) return rc;
  if (newComm == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [newComm] is nullptr");
  auto old = vigil::api::LookupComm(comm);
  if (!old) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if ((flags & ~VIGIL_SHRINK_ABORT) != 0) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("flags[{:#x}] is invalid: expected VIGIL_SHRINK_DEFAULT or "
                                "VIGIL_SHRINK_ABORT",
                                flags));
  }
  if (excludeRanks == nullptr && excludeCount != 0) {
    return ArgError(kApi, HCCL_E_PTR,
                    fmt::format("ptr [excludeRanks] is nullptr but excludeCount is {} (NULL with "
                                "0 means: the ranks the heartbeat knows lost)",
                                excludeCount));
  }
  std::set<uint32_t> given;
  for (uint32_t i = 0; excludeRanks != nullptr && i < excludeCount; ++i) {
    const uint32_t r = excludeRanks[i];
    if (r >= old->size()) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("excludeRanks[{}]={} is invalid: expected < rankSize[{}]", i, r,
                                  old->size()));
    }
    if (r == old->rank()) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("excludeRanks[{}]={} is this rank: an excluded rank does not "
                                  "call VigilCommShrink",
                                  i, r));
    }
    if (!given.insert(r).second) {
      return ArgError(kApi, HCCL_E_PARA, fmt::format("excludeRanks[{}]={} is listed twice", i, r));
    }
  }
  if (vigil::api::InGroup()) {
    return ArgError(kApi, HCCL_E_PARA, "called between HcclGroupStart and HcclGroupEnd");
  }
  auto& heartbeat = vigil::dfx::Heartbeat::Instance();
  if (!heartbeat.enabled()) {
    return ArgError(
        kApi, HCCL_E_NOT_SUPPORT,
        "the survivors agree over the cluster heartbeat's listeners, and the "
        "heartbeat is off (VIGIL_HEARTBEAT=0 or HCCL_DFS_CONFIG cluster_heartbeat:off)");
  }
  const bool from_view = excludeRanks == nullptr;
  const bool abort_first = (flags & VIGIL_SHRINK_ABORT) != 0;
  HCCL_RUN_INFO(
      "[HCCL_TRACE]{}:communicator[{}], rank[{}], rankSize[{}], excludeRanks{} ({}), "
      "flags[{}], ops in flight[{}]",
      kApi, old->identifier(), old->rank(), old->size(),
      from_view ? std::string("[heartbeat view]") : vigil::dfx::RankSetText(given),
      from_view ? "NULL: the ranks the heartbeat knows lost" : "given",
      abort_first ? "VIGIL_SHRINK_ABORT" : "VIGIL_SHRINK_DEFAULT", old->in_flight());

  // The old communicator's ops in flight end first: aborted, or waited for.
  const vigil::EnvConfig& env = vigil::Env();
  if (abort_first) {
    if (!old->aborted()) {
      HCCL_RUN_INFO(
          "[Shrink]communicator[{}] rank[{}]: VIGIL_SHRINK_ABORT aborts its {} op(s) "
          "in flight (HCCL_E_AGAIN)",
          old->identifier(), old->rank(), old->in_flight());
    }
    old->Abort(HCCL_E_AGAIN);
  }
  const std::chrono::seconds drain_bound =
      abort_first                         ? std::chrono::seconds(kAbortDrain)
      : old->options().exec_timeout_s > 0 ? std::chrono::seconds(old->options().exec_timeout_s + 5)
                                          : std::chrono::seconds(env.connect_timeout_s);
  if (!Drain(*old, drain_bound)) {
    return ArgError(kApi, HCCL_E_TIMEOUT,
                    fmt::format("{} op(s) of communicator[{}] were still in flight after {} s; "
                                "call with VIGIL_SHRINK_ABORT to abort them",
                                old->in_flight(), old->identifier(), drain_bound.count()));
  }

  // Agreement.
  vigil::dfx::AgreementInput in;
  in.identifier = old->identifier();
  in.key = old->job_key();
  in.rank = old->rank();
  in.size = old->size();
  for (const auto& r : old->ranks()) {
    in.endpoints.push_back(r.maint_port == 0 ? std::string()
                                             : fmt::format("{}:{}", r.host_ip, r.maint_port));
  }
  in.from_view = from_view;
  in.exclude = given;
  const std::string id = old->identifier();
  in.lost = [&heartbeat, id] { return heartbeat.LostRanks(id); };
  in.timeout = std::chrono::seconds(env.connect_timeout_s);
  const vigil::dfx::AgreementOutcome agreed = vigil::dfx::Agree(in);
  if (!agreed.ok) return AgreementFailed(*old, agreed);
  HCCL_RUN_INFO(
      "[Shrink]communicator[{}] rank[{}] round[{}]: survivors agree to exclude ranks{}, "
      "coordinator rank[{}]{}, agreement took [{}]ms",
      old->identifier(), old->rank(), agreed.round, vigil::dfx::RankSetText(agreed.excluded),
      agreed.coordinator, agreed.coordinated ? " (this rank)" : "", agreed.elapsed.count());

  // The survivors in their old order.
  std::vector<uint32_t> survivors;
  for (uint32_t r = 0; r < old->size(); ++r) {
    if (agreed.excluded.count(r) == 0) survivors.push_back(r);
  }
  const auto me = std::find(survivors.begin(), survivors.end(), old->rank());
  if (me == survivors.end()) {  // the agreement excluded this rank (its view changed meanwhile)
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("the survivors agreed to exclude ranks{}, this rank[{}] among "
                                "them: it is not in the new communicator",
                                vigil::dfx::RankSetText(agreed.excluded), old->rank()));
  }
  const uint32_t new_rank = static_cast<uint32_t>(me - survivors.begin());
  vigil::bootstrap::RootInfo root;
  std::string error;
  if (vigil::bootstrap::DecodeRootInfo(agreed.root, &root, &error) != HCCL_SUCCESS) {
    return ArgError(kApi, HCCL_E_INTERNAL,
                    "the root info from coordinator rank[" + std::to_string(agreed.coordinator) +
                        "] is invalid: " + error);
  }
  HcclComm made = nullptr;
  const HcclResult rc = vigil::api::InitWithRoot(
      kApi, static_cast<uint32_t>(survivors.size()), root, new_rank, config, &made,
      old->ranks()[old->rank()].host_ip, "", &old->options());
  if (rc != HCCL_SUCCESS) {
    HCCL_ERROR(
        "[Shrink][{}]communicator[{}] rank[{}]: the survivors agreed to exclude ranks{} "
        "but the new communicator of {} ranks could not be built (see the lines above), "
        "return {}",
        kApi, old->identifier(), old->rank(), vigil::dfx::RankSetText(agreed.excluded),
        survivors.size(), vigil::api::ResultName(rc));
    return rc;
  }
  auto created = vigil::api::LookupComm(made);
  const Millis took = Since(start);
  // The line vigil diagnose reads (data/formats): both identifiers, sizes, ranks, the excluded
  // ranks and the time it took.
  HCCL_RUN_INFO(
      "[Shrink]communicator[{}] rankSize[{}] shrunk to communicator[{}] rankSize[{}] "
      "by rank[{}] (new rank[{}]): excluded ranks{}, coordinator rank[{}], "
      "agreement[{}]ms, total[{}]ms",
      old->identifier(), old->size(), created->identifier(), created->size(), old->rank(), new_rank,
      vigil::dfx::RankSetText(agreed.excluded), agreed.coordinator, agreed.elapsed.count(),
      took.count());
  vigil::dfx::Heartbeat::ShrinkNote note;
  note.from = old->identifier();
  note.to = created->identifier();
  note.from_rank = old->rank();
  note.to_rank = new_rank;
  note.from_size = old->size();
  note.to_size = created->size();
  note.excluded = agreed.excluded;
  note.ms = took.count();
  note.at = vigil::WallClock::now();
  heartbeat.NoteShrink(note);
  vigil::dfx::ShrinkRecord record;
  record.from = note.from;
  record.to = note.to;
  record.from_rank = note.from_rank;
  record.to_rank = note.to_rank;
  record.from_size = note.from_size;
  record.to_size = note.to_size;
  record.excluded.assign(agreed.excluded.begin(), agreed.excluded.end());
  record.coordinator = agreed.coordinator;
  record.agreement_ms = agreed.elapsed.count();
  record.ms = took.count();
  record.at = note.at;
  vigil::dfx::RecordShrink(record);
  *newComm = made;
  return HCCL_SUCCESS;
}

}  // extern "C"
