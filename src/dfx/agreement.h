// The survivors' agreement on whom a shrink excludes (VigilCommShrink, vigil/ext.h), before any
// of them builds the smaller communicator. Its messages travel over the heartbeat's maintenance
// listeners (one per process; every communicator knows each rank's from the rendezvous), each on
// a short connection of its own (frame kAgree), never over the communicator's data links: the
// fault may have broken those, and an abort closes them.
//
// Round k of communicator C (the k-th shrink of C this rank calls). Every caller P holds an
// exclude set E_P (given, or its heartbeat's LOST view of C, refreshed while it waits) and a
// coordinator c_P = the lowest rank not in E_P.
//   propose  P sends (E_P, given or view) to every rank <= c_P but itself, again whenever its
//            view changes. The lowest coordinator of any caller therefore hears every caller.
//   decide   a coordinator that has heard every rank not in its E propose that same E makes the
//            new communicator's root info (its rendezvous is served by this process) and sends
//            (agreed, E, root info) to each of them. Any caller that hears a different set -
//            at once when both were given; after kSettle when one is a heartbeat view, which may
//            still be converging - or whose coordinator hears nothing from a rank not in E within
//            the bound, or learns that such a rank was lost, sends (failed, the ranks and every
//            view it heard) to every rank not in E and every rank it heard from.
//   wait     the others wait for a decision; a failure from anyone ends their call too.
// Bounds: a coordinator waits `timeout` from its call; the others timeout + kDecisionGrace.
// Nothing waits longer, so a survivor that never calls, or a coordinator that dies, costs at
// most that, never a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/job_key.h"
#include "hccl/hccl_types.h"

namespace vigil::dfx {

using namespace std::chrono_literals;

// A heartbeat view gets this long to converge with the others before a difference fails.
inline constexpr auto kSettle = 3s;
// How much longer than the coordinator a participant waits for its decision.
inline constexpr auto kDecisionGrace = 5s;

struct AgreementInput {
  std::string identifier;  // the communicator being shrunk
  uint32_t rank = 0;
  uint32_t size = 0;
  std::vector<std::string> endpoints;  // per rank: "ip:port" of its heartbeat listener, "" none
  bool from_view = false;              // excludeRanks == NULL: E is the heartbeat's LOST view
  std::set<uint32_t> exclude;          // given (from_view false)
  std::function<std::set<uint32_t>()> lost;  // the heartbeat's LOST ranks of the communicator
  std::chrono::milliseconds timeout{120000};
  // The communicator's job key: every message's connection proves it, and the new root info
  // carries it (so the shrunk communicator stays the same job's).
  auth::JobKey key;
};

// One caller's proposal as heard.
struct ShrinkView {
  uint32_t rank = 0;
  bool from_view = false;
  std::set<uint32_t> exclude;
};

struct AgreementOutcome {
  bool ok = false;
  uint32_t round = 0;
  uint32_t coordinator = 0;
  bool coordinated = false;  // this rank decided
  std::set<uint32_t> excluded;
  HcclRootInfo root{};  // agreed: the new communicator's root info
  // failed: what happened, naming the ranks and their views (one line).
  std::string error;
  std::vector<ShrinkView> views;  // every proposal this rank heard, its own included
  std::chrono::milliseconds elapsed{0};
};

// Runs one round of the agreement for the calling rank (blocking, bounded as above).
AgreementOutcome Agree(const AgreementInput& in);

// The heartbeat's listener hands every kAgree frame body here (any thread; never blocks).
void DeliverAgreementFrame(const std::vector<uint8_t>& body);

// "[1,3]".
std::string RankSetText(const std::set<uint32_t>& ranks);
// "rank 0 excludes [3] (given), rank 2 excludes [1,3] (heartbeat view)".
std::string ViewsText(const std::vector<ShrinkView>& views);

}  // namespace vigil::dfx
